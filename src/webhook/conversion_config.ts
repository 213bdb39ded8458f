/**
 * Where the API server finds a CRD's conversion webhook: `spec.conversion.webhook.clientConfig`
 * of the operator's multi-version CRDs, given the same treatment as the admission
 * configurations (`register.ts`, `local_registration.ts`).
 *
 * - Manifests (`install`, `manifests`, `chart`): {@linkcode withConversionWebhook} points the
 *   CRD at the operator's webhook Service, path `/convert`.
 * - In the cluster: the running operator writes its Service (in the namespace it runs in) and
 *   the CA bundle of its serving certificate into each CRD, at start and on every renewal
 *   ({@linkcode patchConversionWebhooks}), as it patches `caBundle` into its admission
 *   configurations.
 * - Outside the cluster: a local run takes the CRDs over with its URL on loopback and hands
 *   them back when it stops ({@linkcode takeOverConversions}); the saved `spec.conversion`
 *   lives in an annotation on the CRD itself, so a killed run is repaired by the next local run
 *   or by `install` ({@linkcode restoreConversions}).
 *
 * Only CRDs whose `spec.conversion.strategy` is `Webhook` are touched. Writes are updates
 * guarded by `resourceVersion`, retried on conflicts.
 *
 * @module
 */
import { isConflict, isNotFound } from "../client/errors/api_error.ts";
import type { Client } from "../client/client.ts";
import type { ConversionWebhookClientConfig } from "../core/crd.ts";
import { CustomResourceDefinition } from "../core/kinds_cluster.ts";
import type { KubeObject } from "../core/object.ts";
import { getLogger } from "../util/log.ts";
import { CONVERSION_PATH } from "./conversion.ts";
import { SAVED_WEBHOOKS_ANNOTATION } from "./local_registration.ts";
import type { WebhookTarget } from "./manifests.ts";

const log = getLogger(["kubeno", "webhook"]);

/**
 * The conversion webhook's client configuration for a target.
 *
 * @param target The operator's Service, or a base URL (`https://127.0.0.1:9443`).
 * @param caBundlePem PEM bundle the API server should trust, when known.
 * @returns `{ service: {..., path: "/convert"} }` or `{ url: ".../convert" }`, with `caBundle`.
 * @throws {TypeError} When a URL target is not `https://`.
 *
 * @example The operator's Service
 * ```ts
 * import { conversionClientConfig } from "./conversion_config.ts";
 * const c = conversionClientConfig({ service: { namespace: "demo-system", name: "demo-webhook" } });
 * if (c.service?.path !== "/convert" || c.service.port !== 443) throw new Error();
 * ```
 */
export function conversionClientConfig(
  target: WebhookTarget,
  caBundlePem?: string,
): ConversionWebhookClientConfig {
  if (target.url !== undefined && !target.url.startsWith("https://")) {
    throw new TypeError(
      `Cannot register a conversion webhook at "${target.url}": the URL must be https://`,
    );
  }
  return {
    ...(target.url !== undefined
      ? { url: `${target.url.replace(/\/+$/, "")}${CONVERSION_PATH}` }
      : {
        service: {
          namespace: target.service.namespace,
          name: target.service.name,
          path: CONVERSION_PATH,
          port: target.service.port ?? 443,
        },
      }),
    ...(caBundlePem ? { caBundle: btoa(caBundlePem) } : {}),
  };
}

type CrdLike = KubeObject & {
  spec?: {
    conversion?: {
      strategy?: string;
      webhook?: { clientConfig?: unknown; conversionReviewVersions?: string[] };
    };
  };
};

/**
 * Whether a CRD converts through a webhook (`spec.conversion.strategy: Webhook`).
 *
 * @param crd A CustomResourceDefinition.
 * @returns True when it names a conversion webhook.
 *
 * @example
 * ```ts
 * import { usesConversionWebhook } from "./conversion_config.ts";
 * if (usesConversionWebhook({ metadata: {}, spec: { conversion: { strategy: "None" } } } as never)) {
 *   throw new Error();
 * }
 * ```
 */
export function usesConversionWebhook(crd: KubeObject): boolean {
  return (crd as CrdLike).spec?.conversion?.strategy === "Webhook";
}

/**
 * A copy of `crd` whose conversion webhook points at `target`; other CRDs are copied as
 * they are.
 *
 * @param crd A CustomResourceDefinition.
 * @param target The operator's Service, or a base URL.
 * @param caBundlePem PEM bundle, when known (supplied certificates).
 * @returns The CRD to apply.
 *
 * @example Point a CRD at the operator's Service
 * ```ts
 * import { withConversionWebhook } from "./conversion_config.ts";
 * const crd = withConversionWebhook(
 *   { metadata: { name: "widgets.example.com" }, spec: { conversion: { strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"] } } } } as never,
 *   { service: { namespace: "widget-system", name: "widget-operator-webhook" } },
 * ) as never as { spec: { conversion: { webhook: { clientConfig: { service: { namespace: string } } } } } };
 * if (crd.spec.conversion.webhook.clientConfig.service.namespace !== "widget-system") throw new Error();
 * ```
 */
export function withConversionWebhook<T extends KubeObject>(
  crd: T,
  target: WebhookTarget,
  caBundlePem?: string,
): T {
  const copy = structuredClone(crd) as T & CrdLike;
  if (!usesConversionWebhook(copy)) return copy;
  const conversion = copy.spec!.conversion!;
  conversion.webhook = {
    conversionReviewVersions: ["v1"],
    ...conversion.webhook,
    clientConfig: conversionClientConfig(target, caBundlePem),
  };
  return copy;
}

type Crd = CustomResourceDefinition;

/** Options of {@linkcode patchConversionWebhooks}. */
export interface PatchConversionWebhooksOptions {
  /** The operator's Service; leave out to change only the CA bundle. */
  target?: WebhookTarget;
  /** PEM CA bundle of the serving certificate. */
  caBundlePem?: string;
  /** Cancels the requests. */
  signal?: AbortSignal;
}

/**
 * Points the conversion webhook of each named CRD at the operator's Service and sets its CA
 * bundle; CRDs that are missing or convert without a webhook are skipped, unchanged ones are
 * not written.
 *
 * @param client The client.
 * @param crdNames The CRDs, `<plural>.<group>`.
 * @param options Target, CA bundle, signal.
 * @returns How many CRDs were changed.
 * @throws {ApiError} When reading or writing fails for another reason than a conflict.
 *
 * @example Publish a renewed CA
 * ```ts ignore — needs a live API server
 * import { patchConversionWebhooks } from "./conversion_config.ts";
 * import { createClient } from "../client/client.ts";
 * import { createCa } from "../util/x509.ts";
 *
 * using client = await createClient();
 * const [oldCa, newCa] = [await createCa("old"), await createCa("new")];
 * await patchConversionWebhooks(client, ["myapps.apps.kubeno.dev"], {
 *   target: { service: { namespace: "myapp-system", name: "myapp-operator-webhook" } },
 *   caBundlePem: newCa.certPem + oldCa.certPem,
 * });
 * ```
 */
export async function patchConversionWebhooks(
  client: Client,
  crdNames: readonly string[],
  options: PatchConversionWebhooksOptions,
): Promise<number> {
  let changed = 0;
  for (const name of crdNames) {
    const wrote = await update(client, name, options.signal, (crd) => {
      const webhook = crd.spec.conversion!.webhook ??= { conversionReviewVersions: ["v1"] };
      const before = JSON.stringify(webhook.clientConfig ?? {});
      const caBundle = options.caBundlePem
        ? btoa(options.caBundlePem)
        : webhook.clientConfig?.caBundle;
      webhook.clientConfig = options.target
        ? { ...conversionClientConfig(options.target), ...(caBundle ? { caBundle } : {}) }
        : { ...webhook.clientConfig, ...(caBundle ? { caBundle } : {}) };
      return JSON.stringify(webhook.clientConfig) !== before;
    });
    if (wrote) changed++;
  }
  return changed;
}

/** A local run's hold on the CRDs' conversion webhook; call `restore()` when the run ends. */
export interface LocalConversionRegistration {
  /** The CRDs taken over. */
  readonly crdNames: readonly string[];
  /** CRDs that still held an earlier local run's registration. */
  readonly staleFound: readonly string[];
  /**
   * Sets the CA bundle of this run's registration (after a certificate renewal).
   * @param caBundlePem The PEM bundle.
   * @returns Resolves once written.
   */
  setCaBundle(caBundlePem: string): Promise<void>;
  /**
   * Puts back the saved `spec.conversion` of every CRD still pointing at this run.
   * @returns Resolves once done.
   * @throws {ApiError} When a write fails for another reason than a conflict.
   */
  restore(): Promise<void>;
}

/** Options of {@linkcode takeOverConversions}. */
export interface TakeOverConversionsOptions {
  /** The local server's base URL, `https://127.0.0.1:<port>`. */
  url: string;
  /** PEM CA bundle that signed the local server's certificate. */
  caBundle?: string;
  /** Cancels the requests of the take-over (not of `restore`). */
  signal?: AbortSignal;
}

/**
 * Points the conversion webhook of each named CRD at a server outside the cluster, saving
 * its `spec.conversion` in an annotation so that `restore()` (or a later
 * {@linkcode restoreConversions}) can put it back.
 *
 * @param client The client.
 * @param crdNames The CRDs, `<plural>.<group>`.
 * @param options URL, CA bundle, signal.
 * @returns The registration.
 * @throws {ApiError} When a CRD cannot be read or written.
 *
 * @example
 * ```ts ignore — needs a live API server
 * import { takeOverConversions } from "./conversion_config.ts";
 * import { createClient } from "../client/client.ts";
 * import { createCa } from "../util/x509.ts";
 *
 * using client = await createClient();
 * const ca = await createCa("local-webhooks");
 * const reg = await takeOverConversions(client, ["myapps.apps.kubeno.dev"], {
 *   url: "https://127.0.0.1:9443",
 *   caBundle: ca.certPem,
 * });
 * try {
 *   await new Promise((resolve) => Deno.addSignalListener("SIGINT", () => resolve(undefined)));
 * } finally {
 *   await reg.restore();
 * }
 * ```
 */
export async function takeOverConversions(
  client: Client,
  crdNames: readonly string[],
  options: TakeOverConversionsOptions,
): Promise<LocalConversionRegistration> {
  const { url, signal } = options;
  const mine = conversionClientConfig({ url }, options.caBundle);
  const held: string[] = [];
  const staleFound: string[] = [];
  for (const name of crdNames) {
    const wrote = await update(client, name, signal, (crd) => {
      const annotations = { ...crd.metadata.annotations };
      const previous = annotations[SAVED_WEBHOOKS_ANNOTATION];
      if (previous !== undefined) staleFound.push(name);
      // An earlier run's saved copy is the one to keep: the live entry is its URL.
      annotations[SAVED_WEBHOOKS_ANNOTATION] = previous ?? JSON.stringify(crd.spec.conversion);
      crd.metadata.annotations = annotations;
      crd.spec.conversion!.webhook = {
        conversionReviewVersions: ["v1"],
        ...crd.spec.conversion!.webhook,
        clientConfig: structuredClone(mine),
      };
      return true;
    }, true);
    if (wrote) held.push(name);
  }
  const ours = (crd: Crd) =>
    crd.metadata.annotations?.[SAVED_WEBHOOKS_ANNOTATION] !== undefined &&
    crd.spec.conversion?.webhook?.clientConfig?.url === mine.url;
  return {
    crdNames: held,
    staleFound,
    async setCaBundle(caBundlePem: string): Promise<void> {
      for (const name of held) {
        await update(client, name, undefined, (crd) => {
          if (!ours(crd)) return false;
          const cc = crd.spec.conversion!.webhook!.clientConfig!;
          if (cc.caBundle === btoa(caBundlePem)) return false;
          cc.caBundle = btoa(caBundlePem);
          return true;
        });
      }
    },
    async restore(): Promise<void> {
      for (const name of held) {
        await update(client, name, undefined, (crd) => {
          if (!ours(crd)) {
            log.info(
              "Not restoring the conversion webhook of {name}: it changed since this run registered",
              { name },
            );
            return false;
          }
          return putBack(crd);
        });
      }
    },
  };
}

/**
 * Restores the conversion webhook of CRDs that a killed local run left pointing at itself:
 * each named CRD carrying the saved-registration annotation gets its saved `spec.conversion`
 * back. `install` calls it before applying, so it converges after any local run.
 *
 * @param client The client.
 * @param crdNames The CRDs, `<plural>.<group>`.
 * @returns The CRDs restored.
 * @throws {ApiError} When a CRD cannot be read or written.
 *
 * @example
 * ```ts ignore — needs a live API server
 * import { restoreConversions } from "./conversion_config.ts";
 * import { createClient } from "../client/client.ts";
 *
 * using client = await createClient();
 * const repaired = await restoreConversions(client, ["myapps.apps.kubeno.dev"]);
 * console.log(repaired);
 * ```
 */
export async function restoreConversions(
  client: Client,
  crdNames: readonly string[],
): Promise<string[]> {
  const restored: string[] = [];
  for (const name of crdNames) {
    const wrote = await update(client, name, undefined, putBack);
    if (wrote) restored.push(name);
  }
  return restored;
}

/** Puts the saved `spec.conversion` back and drops the annotation; false when none is saved. */
function putBack(crd: Crd): boolean {
  const annotations = { ...crd.metadata.annotations };
  const text = annotations[SAVED_WEBHOOKS_ANNOTATION];
  if (text === undefined) return false;
  delete annotations[SAVED_WEBHOOKS_ANNOTATION];
  crd.metadata.annotations = Object.keys(annotations).length ? annotations : undefined;
  try {
    const saved = JSON.parse(text);
    if (saved && typeof saved === "object" && typeof saved.strategy === "string") {
      crd.spec.conversion = saved;
    }
  } catch { /* unreadable: keep the live configuration, drop the annotation */ }
  return true;
}

/**
 * Reads the CRD, lets `change` edit it (returning whether it did) and writes it back,
 * retrying conflicts. Missing CRDs and CRDs without a conversion webhook are skipped.
 *
 * @returns Whether the CRD was written.
 */
async function update(
  client: Client,
  name: string,
  signal: AbortSignal | undefined,
  change: (crd: Crd) => boolean,
  required = false,
): Promise<boolean> {
  for (let attempt = 0;; attempt++) {
    let crd: Crd;
    try {
      crd = await client.get(CustomResourceDefinition, name, { signal });
    } catch (err) {
      if (isNotFound(err) && !required) return false;
      throw err;
    }
    if (!usesConversionWebhook(crd)) return false;
    if (!change(crd)) return false;
    try {
      await client.replace(CustomResourceDefinition, crd, { signal });
      return true;
    } catch (err) {
      if (!isConflict(err) || attempt >= 10) throw err;
    }
  }
}
