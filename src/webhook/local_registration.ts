/**
 * Webhook registration for a run outside the cluster (local development, tests), handed back
 * cleanly when the run ends.
 *
 * Flow: {@linkcode takeOverWebhooks} reads the validating and mutating configurations named
 * after the operator. Whatever it finds — the Service-based entries that `install` or
 * `manifests | kubectl apply -f -` wrote, or nothing — is saved in an annotation on the
 * configuration itself ({@linkcode SAVED_WEBHOOKS_ANNOTATION}), and the entries are replaced
 * by URL-based ones pointing at the local server on loopback, as envtest does. `restore()`
 * puts the saved entries back (or deletes a configuration that did not exist before) and
 * removes the annotation, so that `install` and `kubectl apply` of the generated manifests
 * find the objects they wrote.
 *
 * Guarantees: the saved copy lives in the cluster, so a run that was killed before it could
 * restore is repaired by the next local run (which keeps the older saved copy rather than
 * saving its predecessor's URL entries) or by {@linkcode restoreWebhooks}, which `install`
 * calls. `restore()` touches a configuration only while it still carries this run's URL: a
 * configuration rewritten since (by `install`, by another local run) is left alone. Writes
 * are updates guarded by `resourceVersion`, retried on conflicts.
 *
 * Caveats: while a local run holds the registration, an operator running in the cluster is
 * not called by the API server. A caBundle renewal by such an in-cluster operator during a
 * local run patches the local entries and is overwritten at restore.
 *
 * @module
 */
import { isAlreadyExists, isConflict, isNotFound } from "../client/errors/api_error.ts";
import type { Client } from "../client/client.ts";
import {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
  type Webhook,
} from "../core/kinds_cluster.ts";
import type { Resource } from "../core/resource.ts";
import { getLogger } from "../util/log.ts";
import { webhookConfigurations, type WebhookSpec } from "./manifests.ts";

const log = getLogger(["kubeno", "webhook"]);

/**
 * Annotation holding the entries a local run replaced: JSON `{"webhooks": [...]}`, or
 * `{"absent": true}` when the configuration did not exist before the run.
 */
export const SAVED_WEBHOOKS_ANNOTATION = "kubeno.dev/saved-by-local-run";

type Configuration = ValidatingWebhookConfiguration | MutatingWebhookConfiguration;
type ConfigurationResource = Resource<Configuration>;

const KINDS: readonly ConfigurationResource[] = [
  ValidatingWebhookConfiguration as ConfigurationResource,
  MutatingWebhookConfiguration as ConfigurationResource,
];

/** What a local run found and replaced, per configuration kind. */
export interface TakeOverResult {
  /** Kinds whose configuration held the entries of an earlier run that never restored them. */
  staleFound: string[];
  /** Kinds whose configuration existed before (and will be restored rather than deleted). */
  replaced: string[];
}

/** A local run's registration; call {@linkcode LocalRegistration.restore} when the run ends. */
export interface LocalRegistration {
  /** The base URL the configurations point at, e.g. `https://127.0.0.1:9443`. */
  readonly url: string;
  /** What was found at take-over. */
  readonly found: TakeOverResult;
  /**
   * Sets the `caBundle` of this run's entries (after a certificate renewal).
   * @param caBundlePem The PEM bundle.
   * @returns Resolves once written.
   */
  setCaBundle(caBundlePem: string): Promise<void>;
  /**
   * Puts back what the run replaced: the saved entries, or no configuration at all.
   * @returns Resolves once done; configurations changed by others since are left alone.
   * @throws {ApiError} When the API server refuses a write for another reason than a conflict.
   */
  restore(): Promise<void>;
}

/** Options of {@linkcode takeOverWebhooks}. */
export interface TakeOverWebhooksOptions {
  /** Name of both configurations, the operator's. */
  name: string;
  /** The local server's base URL, `https://127.0.0.1:<port>`. */
  url: string;
  /** PEM CA bundle that signed the local server's certificate. */
  caBundle?: string;
  /** Cancels the requests of the take-over (not of `restore`). */
  signal?: AbortSignal;
}

/**
 * Points the operator's webhook configurations at a server outside the cluster, saving what
 * they held so that `restore()` can put it back.
 *
 * @param client The client.
 * @param webhooks The admissions served.
 * @param options Name, URL, CA bundle, signal.
 * @returns The registration; call `restore()` when the local run ends.
 * @throws {ApiError} When a configuration cannot be read or written.
 *
 * @example Register a local run and hand back on exit
 * ```ts ignore — needs a live API server
 * import { takeOverWebhooks } from "./local_registration.ts";
 * import { startWebhookServer } from "./server.ts";
 * import { admission } from "./admission.ts";
 * import { createClient } from "../client/client.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 * import { createCa, issueCert } from "../util/x509.ts";
 *
 * using client = await createClient();
 * const webhook = admission(ConfigMap, { validate: () => undefined });
 * const ca = await createCa("local-webhooks");
 * const certificate = await issueCert({ commonName: "localhost", ipAddresses: ["127.0.0.1"], server: true }, ca);
 * await using server = await startWebhookServer({ webhooks: [webhook], certificate, hostname: "127.0.0.1", port: 0 });
 * const reg = await takeOverWebhooks(client, [webhook], {
 *   name: "myapp-operator",
 *   url: `https://127.0.0.1:${server.port}`,
 *   caBundle: ca.certPem,
 * });
 * try {
 *   await new Promise((resolve) => Deno.addSignalListener("SIGINT", () => resolve(undefined)));
 * } finally {
 *   await reg.restore();
 * }
 * ```
 */
export async function takeOverWebhooks(
  client: Client,
  webhooks: readonly WebhookSpec[],
  options: TakeOverWebhooksOptions,
): Promise<LocalRegistration> {
  const { name, url, signal } = options;
  const wanted = webhookConfigurations(webhooks, {
    name,
    target: { url },
    caBundle: options.caBundle,
    labels: { "app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "kubeno" },
  });
  const found: TakeOverResult = { staleFound: [], replaced: [] };
  const held: ConfigurationResource[] = [];
  for (const res of KINDS) {
    const desired =
      (res.kind === "ValidatingWebhookConfiguration" ? wanted.validating : wanted.mutating) as
        | Configuration
        | undefined;
    if (!desired) continue;
    await retryConflicts(async () => {
      const live = await getOrUndefined(client, res, name, signal);
      const previous = live?.metadata.annotations?.[SAVED_WEBHOOKS_ANNOTATION];
      if (previous !== undefined) found.staleFound.push(res.kind);
      else if (live) found.replaced.push(res.kind);
      // An earlier run's saved copy is the one to keep: the live entries are its URL ones.
      const saved = previous ??
        JSON.stringify(live ? { webhooks: live.webhooks ?? [] } : { absent: true });
      const annotations = { ...live?.metadata.annotations, [SAVED_WEBHOOKS_ANNOTATION]: saved };
      if (live) {
        await client.replace(res, {
          ...live,
          metadata: { ...live.metadata, annotations },
          webhooks: desired.webhooks,
        }, { signal });
      } else {
        await client.create(res, {
          ...desired,
          metadata: { ...desired.metadata, annotations },
        }, { signal });
      }
    });
    held.push(res);
  }
  return {
    url,
    found,
    async setCaBundle(caBundlePem: string): Promise<void> {
      const encoded = btoa(caBundlePem);
      for (const res of held) {
        await retryConflicts(async () => {
          const live = await getOrUndefined(client, res, name);
          if (!live || !isOurs(live, url)) return;
          const hooks = live.webhooks ?? [];
          if (hooks.every((h) => h.clientConfig.caBundle === encoded)) return;
          for (const h of hooks) h.clientConfig.caBundle = encoded;
          await client.replace(res, live);
        });
      }
    },
    async restore(): Promise<void> {
      for (const res of held) {
        await retryConflicts(async () => {
          const live = await getOrUndefined(client, res, name);
          if (!live || !isOurs(live, url)) {
            log.info("Not restoring {kind} {name}: it changed since this run registered", {
              kind: res.kind,
              name,
            });
            return;
          }
          await putBack(client, res, live);
        });
      }
    },
  };
}

/**
 * Restores configurations a local run left behind (one that was killed before it could
 * restore them): for each kind, when the configuration named `name` carries
 * {@linkcode SAVED_WEBHOOKS_ANNOTATION}, its saved entries are put back or it is deleted.
 * `install` calls this before applying, so it converges after any local run.
 *
 * @param client The client.
 * @param name The configurations' name.
 * @returns The kinds that were restored.
 * @throws {ApiError} When a configuration cannot be read or written.
 *
 * @example
 * ```ts ignore — needs a live API server
 * import { restoreWebhooks } from "./local_registration.ts";
 * import { createClient } from "../client/client.ts";
 *
 * using client = await createClient();
 * const repaired = await restoreWebhooks(client, "myapp-operator");
 * console.log(repaired);
 * ```
 */
export async function restoreWebhooks(client: Client, name: string): Promise<string[]> {
  const restored: string[] = [];
  for (const res of KINDS) {
    await retryConflicts(async () => {
      const live = await getOrUndefined(client, res, name);
      if (live?.metadata.annotations?.[SAVED_WEBHOOKS_ANNOTATION] === undefined) return;
      await putBack(client, res, live);
      restored.push(res.kind);
    });
  }
  return restored;
}

async function putBack(
  client: Client,
  res: ConfigurationResource,
  live: Configuration,
): Promise<void> {
  const annotations = { ...live.metadata.annotations };
  const saved = parseSaved(annotations[SAVED_WEBHOOKS_ANNOTATION]);
  delete annotations[SAVED_WEBHOOKS_ANNOTATION];
  if (saved === "absent") {
    try {
      await client.delete(res, live.metadata.name!, {
        preconditions: { resourceVersion: live.metadata.resourceVersion },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return;
  }
  await client.replace(res, {
    ...live,
    metadata: {
      ...live.metadata,
      annotations: Object.keys(annotations).length ? annotations : undefined,
    },
    webhooks: saved,
  });
}

/** The saved entries, or "absent"; unreadable annotations count as "absent" (nothing to keep). */
function parseSaved(text: string | undefined): Webhook[] | "absent" {
  try {
    const v = JSON.parse(text ?? "");
    if (v && Array.isArray(v.webhooks)) return v.webhooks;
  } catch { /* fall through */ }
  return "absent";
}

/** Whether every entry of the configuration points at `url` (this run's registration). */
function isOurs(cfg: Configuration, url: string): boolean {
  if (cfg.metadata.annotations?.[SAVED_WEBHOOKS_ANNOTATION] === undefined) return false;
  const hooks = cfg.webhooks ?? [];
  return hooks.length > 0 && hooks.every((h) => h.clientConfig.url?.startsWith(`${url}/`));
}

async function getOrUndefined(
  client: Client,
  res: ConfigurationResource,
  name: string,
  signal?: AbortSignal,
): Promise<Configuration | undefined> {
  try {
    return await client.get(res, name, { signal });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function retryConflicts(fn: () => Promise<void>): Promise<void> {
  for (let attempt = 0;; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= 10 || !(isConflict(err) || isNotFound(err) || isAlreadyExists(err))) throw err;
    }
  }
}
