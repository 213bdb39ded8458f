/**
 * Running an operator's admission webhooks in one call: certificates (self-managed in a
 * Secret, or supplied in a directory), the HTTPS server, certificate hand-over on renewal,
 * and, for local runs, URL-based registration on loopback as envtest does. This is the seam
 * the manager calls; each piece is usable on its own (`selfManagedCertificates`,
 * `watchCertificateDir`, `startWebhookServer`, `registerWebhooks`, `takeOverWebhooks`).
 *
 * A local run depends on no namespace: its certificate is kept in memory (unless a directory
 * is supplied), and its registration is a take-over that `close()` hands back — the entries
 * `install` or the deployed manifests wrote are restored, or configurations that did not
 * exist before are deleted (see `local_registration.ts`).
 *
 * @module
 */
import type { Admission } from "./admission.ts";
import type { Client } from "../client/client.ts";
import { type CertificateDirOptions, watchCertificateDir } from "./cert_dir.ts";
import {
  type CertificateSource,
  selfManagedCertificates,
  type SelfManagedCertificatesOptions,
} from "./self_managed_certs.ts";
import { patchCaBundle } from "./register.ts";
import { type LocalRegistration, takeOverWebhooks } from "./local_registration.ts";
import { getLogger } from "../util/log.ts";
import { startWebhookServer, type WebhookServer, type WebhookServerOptions } from "./server.ts";
import type { ConvertibleResource } from "./conversion.ts";
import {
  type LocalConversionRegistration,
  patchConversionWebhooks,
  takeOverConversions,
} from "./conversion_config.ts";

const log = getLogger(["kubeno", "webhook"]);

/** Options of {@linkcode serveWebhooks}. */
export interface ServeWebhooksOptions {
  /** The operator's name: names the configurations and the certificate Secret. */
  name: string;
  /**
   * The operator's namespace (holds the certificate Secret and the Service); only named in
   * the certificate when `local`.
   */
  namespace: string;
  /**
   * Port of the webhook server (`--webhook-port`); `0` picks a free one.
   * @default 9443
   */
  port?: number;
  /**
   * Supplied certificate directory (`--webhook-cert-path`); self-managed certificates
   * when absent.
   */
  certDir?: string;
  /**
   * Outside a cluster: listen on 127.0.0.1, keep self-managed certificates in memory, and
   * take over the configurations with URL-based entries pointing there until `close()`,
   * which restores what they held. In a cluster the configurations come from `install` and
   * point at the Service.
   * @default false
   */
  local?: boolean;
  /**
   * Listen address.
   * @default "127.0.0.1" when `local`, else every interface (IPv6 and IPv4)
   */
  hostname?: string;
  /**
   * Multi-version resources whose conversion webhook is served at `/convert`; their CRDs'
   * `spec.conversion.webhook.clientConfig` is kept pointing here (the Service `<name>-webhook`
   * in `namespace`, or with `local` this server's URL until `close()`) with the CA bundle.
   * @default []
   */
  conversions?: readonly ConvertibleResource[];
  /** Options of self-managed certificates (lifetime, renewal point, clock). */
  certificates?: Partial<Omit<SelfManagedCertificatesOptions, "name" | "namespace" | "signal">>;
  /** Options of the supplied-directory watcher. */
  certDirOptions?: Omit<CertificateDirOptions, "signal">;
  /** Server limits. */
  server?: Pick<
    WebhookServerOptions,
    "maxBodyBytes" | "requestTimeoutMs" | "handshakeTimeoutMs" | "idleTimeoutMs" | "onRequest"
  >;
  /** Stops everything when aborted. */
  signal?: AbortSignal;
}

/** Running webhooks, as {@linkcode serveWebhooks} returns them. */
export interface RunningWebhooks extends AsyncDisposable {
  /** The HTTPS server. */
  readonly server: WebhookServer;
  /** Where the certificate comes from. */
  readonly certificates: CertificateSource & AsyncDisposable;
  /** With `local`: the URL registration that `close()` hands back. */
  readonly registration?: LocalRegistration;
  /** With `local` and `conversions`: the CRDs' URL registration that `close()` hands back. */
  readonly conversionRegistration?: LocalConversionRegistration;
  /**
   * Hands back a local registration, then stops renewal and the server.
   * @returns Resolves once stopped; a failed hand-back is logged, not thrown.
   */
  close(): Promise<void>;
}

/**
 * Starts the certificates and the webhook server for `webhooks`, keeps the served
 * certificate and `caBundle` current, and with `local` registers URL-based configurations.
 *
 * @param client The client.
 * @param webhooks The admissions.
 * @param options Name, namespace, port, certificates, local mode, signal.
 * @returns The running webhooks; close them (or `await using`) on shutdown.
 * @throws {ApiError} When the Secret or the configurations cannot be written.
 * @throws {Error} When the supplied certificate directory is unusable or the port is taken.
 *
 * @example Local development against a cluster
 * ```ts ignore — needs a live API server to register the webhooks with
 * import { serveWebhooks } from "./webhooks.ts";
 * import { admission } from "./admission.ts";
 * import { createClient } from "../client/client.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 *
 * using client = await createClient();
 * const webhook = admission(ConfigMap, { validate: () => undefined });
 * await using running = await serveWebhooks(client, [webhook], {
 *   name: "myapp-operator",
 *   namespace: "default",
 *   local: true,
 *   port: 0,
 * });
 * console.log(`webhooks on https://127.0.0.1:${running.server.port}`);
 * ```
 */
export async function serveWebhooks(
  client: Client,
  webhooks: readonly Admission[],
  options: ServeWebhooksOptions,
): Promise<RunningWebhooks> {
  const { name, namespace, signal } = options;
  let registration: LocalRegistration | undefined;
  let conversionRegistration: LocalConversionRegistration | undefined;
  const conversions = options.conversions ?? [];
  const crdNames = conversions.map((r) => `${r.plural}.${r.group}`);
  const service = {
    service: { namespace, name: options.certificates?.serviceName ?? `${name}-webhook` },
  };
  // In the cluster the CRDs follow the CA bundle as the admission configurations do, and are
  // pointed at this operator's Service (its namespace may differ from the manifests').
  const publishInCluster = async (bundle: string) => {
    // Without admission webhooks there are no configurations (nor RBAC to read them).
    if (webhooks.length) await patchCaBundle(client, name, bundle, { signal });
    if (crdNames.length) {
      await patchConversionWebhooks(client, crdNames, {
        target: service,
        caBundlePem: bundle,
        signal,
      });
    }
  };
  const certificates = options.certDir
    ? await watchCertificateDir(options.certDir, { ...options.certDirOptions, signal })
    : await selfManagedCertificates(client, {
      ...options.certificates,
      name,
      namespace,
      signal,
      ...(options.local
        ? {
          store: options.certificates?.store ?? "memory",
          // Before the take-over there is nothing of this run's to publish into.
          publish: async (bundle: string) => {
            await registration?.setCaBundle(bundle);
            await conversionRegistration?.setCaBundle(bundle);
          },
        }
        : crdNames.length
        ? { publish: options.certificates?.publish ?? publishInCluster }
        : {}),
    });
  let server: WebhookServer;
  try {
    server = await startWebhookServer({
      ...options.server,
      webhooks,
      conversions,
      certificate: certificates.current,
      port: options.port ?? 9443,
      hostname: options.hostname ?? (options.local ? "127.0.0.1" : undefined),
      signal,
    });
  } catch (err) {
    await certificates[Symbol.asyncDispose]();
    throw err;
  }
  certificates.onChange((cert) => {
    server.setCertificate(cert);
    // Supplied certificates carry their CA in ca.crt; self-managed ones patch it themselves.
    if (options.certDir && cert.caBundlePem) {
      const bundle = cert.caBundlePem;
      const publish = options.local
        ? Promise.all([
          registration?.setCaBundle(bundle),
          conversionRegistration?.setCaBundle(bundle),
        ])
        : publishInCluster(bundle);
      publish.catch((err) =>
        log.warn("Cannot publish the webhook CA bundle: {message}", { message: String(err) })
      );
    }
  });
  let closing: Promise<void> | undefined;
  const close = () =>
    closing ??= (async () => {
      try {
        await conversionRegistration?.restore();
      } catch (err) {
        log.error(
          'Cannot restore the conversion webhook of {crds} after the local run: {message}; run "install" to restore it',
          { crds: crdNames.join(", "), message: err instanceof Error ? err.message : String(err) },
        );
      }
      try {
        await registration?.restore();
      } catch (err) {
        log.error(
          'Cannot restore webhook configurations "{name}" after the local run: {message}; run "install" to restore them',
          { name, message: err instanceof Error ? err.message : String(err) },
        );
      }
      await certificates[Symbol.asyncDispose]();
      await server.shutdown();
    })();
  try {
    if (options.local && crdNames.length) {
      conversionRegistration = await takeOverConversions(client, crdNames, {
        url: `https://127.0.0.1:${server.port}`,
        caBundle: certificates.current.caBundlePem || undefined,
        signal,
      });
      if (conversionRegistration.staleFound.length) {
        log.warn(
          "The conversion webhook of {crds} still held an earlier local run's registration; the configuration it saved will be restored on exit",
          { crds: conversionRegistration.staleFound.join(", ") },
        );
      }
    } else if (crdNames.length && options.certDir) {
      await patchConversionWebhooks(client, crdNames, {
        target: service,
        caBundlePem: certificates.current.caBundlePem || undefined,
        signal,
      });
    }
    if (options.local) {
      registration = await takeOverWebhooks(client, webhooks, {
        name,
        url: `https://127.0.0.1:${server.port}`,
        caBundle: certificates.current.caBundlePem || undefined,
        signal,
      });
      if (registration.found.staleFound.length) {
        log.warn(
          "Webhook configurations {name} still held an earlier local run's registration; the entries it saved will be restored on exit",
          { name },
        );
      }
    } else if (options.certDir && certificates.current.caBundlePem) {
      await patchCaBundle(client, name, certificates.current.caBundlePem, { signal });
    }
  } catch (err) {
    await close();
    throw err;
  }
  return {
    server,
    certificates,
    get registration() {
      return registration;
    },
    get conversionRegistration() {
      return conversionRegistration;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
