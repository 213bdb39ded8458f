/**
 * Writing the operator's webhook configurations to the cluster: registering them (server-side
 * apply), keeping their `caBundle` in step with the serving certificate, and removing them.
 *
 * @module
 */
import { isConflict, isNotFound } from "../client/errors/api_error.ts";
import type { Client } from "../client/client.ts";
import {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "../core/kinds_cluster.ts";
import type { KubeObject } from "../core/object.ts";
import {
  type WebhookConfigurationOptions,
  webhookConfigurations,
  type WebhookSpec,
} from "./manifests.ts";

/** Options of {@linkcode registerWebhooks}. */
export interface RegisterWebhooksOptions extends WebhookConfigurationOptions {
  /** Cancels the requests. */
  signal?: AbortSignal;
}

/**
 * Registers `webhooks` with the API server: server-side applies the validating and mutating
 * configurations named `options.name` (taking over fields from other managers). Use a
 * `{ url }` target for local runs and tests (`https://127.0.0.1:<port>`), a `{ service }`
 * target in a cluster.
 *
 * @param client The client.
 * @param webhooks The admissions.
 * @param options Name, target, CA bundle (PEM), labels, signal.
 * @returns The configurations as stored.
 * @throws {ApiError} When the API server refuses a configuration.
 *
 * @example Register URL-based webhooks for a local run
 * ```ts ignore — needs a live API server
 * import { registerWebhooks } from "./register.ts";
 * import { startWebhookServer } from "./server.ts";
 * import { admission } from "./admission.ts";
 * import { createClient } from "../client/client.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 * import { createCa, issueCert } from "../util/x509.ts";
 *
 * using client = await createClient();
 * const webhook = admission(ConfigMap, { validate: () => undefined });
 * const ca = await createCa("webhooks");
 * const certificate = await issueCert({ commonName: "localhost", ipAddresses: ["127.0.0.1"], server: true }, ca);
 * await using server = await startWebhookServer({ webhooks: [webhook], certificate, hostname: "127.0.0.1", port: 0 });
 * await registerWebhooks(client, [webhook], {
 *   name: "myapp-operator",
 *   target: { url: `https://127.0.0.1:${server.port}` },
 *   caBundle: ca.certPem,
 * });
 * ```
 */
export async function registerWebhooks(
  client: Client,
  webhooks: readonly WebhookSpec[],
  options: RegisterWebhooksOptions,
): Promise<KubeObject[]> {
  const { validating, mutating } = webhookConfigurations(webhooks, options);
  const out: KubeObject[] = [];
  const opts = { force: true, signal: options.signal };
  if (validating) {
    out.push(await client.apply(ValidatingWebhookConfiguration, validating as never, opts));
  }
  if (mutating) out.push(await client.apply(MutatingWebhookConfiguration, mutating as never, opts));
  return out;
}

/**
 * Sets `clientConfig.caBundle` of every webhook in the configurations named `name` (both
 * kinds; a missing one is skipped), retrying on conflicts. Unchanged configurations are not
 * written.
 *
 * @param client The client.
 * @param name The configurations' name.
 * @param caBundlePem The PEM bundle (one or more CA certificates).
 * @param options Signal.
 * @returns How many configurations were changed.
 * @throws {ApiError} When reading or writing fails for another reason than a conflict.
 *
 * @example Re-point the webhooks at a renewed CA
 * ```ts ignore — needs a live API server
 * import { patchCaBundle } from "./register.ts";
 * import { createClient } from "../client/client.ts";
 * import { createCa } from "../util/x509.ts";
 *
 * using client = await createClient();
 * const [oldCa, newCa] = [await createCa("old"), await createCa("new")];
 * await patchCaBundle(client, "myapp-operator", newCa.certPem + oldCa.certPem);
 * ```
 */
export async function patchCaBundle(
  client: Client,
  name: string,
  caBundlePem: string,
  options: { signal?: AbortSignal } = {},
): Promise<number> {
  const encoded = btoa(caBundlePem);
  let changed = 0;
  for (const res of [ValidatingWebhookConfiguration, MutatingWebhookConfiguration] as const) {
    for (let attempt = 0;; attempt++) {
      let cfg: ValidatingWebhookConfiguration;
      try {
        cfg = await client.get(res, name, { signal: options.signal });
      } catch (err) {
        if (isNotFound(err)) break;
        throw err;
      }
      const hooks = cfg.webhooks ?? [];
      if (hooks.every((h) => h.clientConfig.caBundle === encoded)) break;
      for (const h of hooks) h.clientConfig.caBundle = encoded;
      try {
        await client.replace(res, cfg, { signal: options.signal });
        changed++;
        break;
      } catch (err) {
        if (!isConflict(err) || attempt >= 10) throw err;
      }
    }
  }
  return changed;
}

/**
 * Reads the CA bundle (PEM) the API server currently trusts for the configurations named
 * `name`: the first webhook's, from the validating configuration, else the mutating one.
 *
 * @param client The client.
 * @param name The configurations' name.
 * @returns The PEM bundle, or `undefined` when there is none.
 * @throws {ApiError} When reading fails for another reason than NotFound.
 *
 * @example
 * ```ts ignore — needs a live API server
 * import { readCaBundle } from "./register.ts";
 * import { createClient } from "../client/client.ts";
 *
 * using client = await createClient();
 * const pem = await readCaBundle(client, "myapp-operator");
 * console.log(pem?.length);
 * ```
 */
export async function readCaBundle(client: Client, name: string): Promise<string | undefined> {
  for (const res of [ValidatingWebhookConfiguration, MutatingWebhookConfiguration] as const) {
    try {
      const b = (await client.get(res, name)).webhooks?.[0]?.clientConfig.caBundle;
      if (b) return atob(b);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return undefined;
}

/**
 * Deletes both configurations named `name`; missing ones are ignored.
 *
 * @param client The client.
 * @param name The configurations' name.
 * @param options Signal.
 * @throws {ApiError} When a deletion fails for another reason than NotFound.
 *
 * @example
 * ```ts ignore — needs a live API server
 * import { unregisterWebhooks } from "./register.ts";
 * import { createClient } from "../client/client.ts";
 *
 * using client = await createClient();
 * await unregisterWebhooks(client, "myapp-operator");
 * ```
 */
export async function unregisterWebhooks(
  client: Client,
  name: string,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  for (const res of [ValidatingWebhookConfiguration, MutatingWebhookConfiguration] as const) {
    try {
      await client.delete(res, name, { signal: options.signal });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
