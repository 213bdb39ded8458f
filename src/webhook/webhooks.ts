/**
 * Running an operator's admission webhooks in one call: certificates (self-managed in a
 * Secret, or supplied in a directory), the HTTPS server, certificate hand-over on renewal,
 * and, for local runs, URL-based registration on loopback as envtest does. This is the seam
 * the manager calls; each piece is usable on its own (`selfManagedCertificates`,
 * `watchCertificateDir`, `startWebhookServer`, `registerWebhooks`).
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
import { patchCaBundle, registerWebhooks } from "./register.ts";
import {
  startWebhookServer,
  type WebhookServer,
  type WebhookServerOptions,
} from "./server.ts";

/** Options of {@linkcode serveWebhooks}. */
export interface ServeWebhooksOptions {
  /** The operator's name: names the configurations and the certificate Secret. */
  name: string;
  /** The operator's namespace (holds the certificate Secret and the Service). */
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
   * Outside a cluster: listen on 127.0.0.1 and register URL-based configurations pointing
   * there. In a cluster the configurations come from `install` and point at the Service.
   * @default false
   */
  local?: boolean;
  /**
   * Listen address.
   * @default "127.0.0.1" when `local`, else "0.0.0.0"
   */
  hostname?: string;
  /** Options of self-managed certificates (lifetime, renewal point, clock). */
  certificates?: Partial<Omit<SelfManagedCertificatesOptions, "name" | "namespace" | "signal">>;
  /** Options of the supplied-directory watcher. */
  certDirOptions?: Omit<CertificateDirOptions, "signal">;
  /** Server limits. */
  server?: Pick<
    WebhookServerOptions,
    "maxBodyBytes" | "requestTimeoutMs" | "handshakeTimeoutMs" | "idleTimeoutMs"
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
  /**
   * Stops renewal and the server.
   * @returns Resolves once both stopped.
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
 * ```ts ignore
 * import { serveWebhooks } from "./webhooks.ts";
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
  const certificates = options.certDir
    ? await watchCertificateDir(options.certDir, { ...options.certDirOptions, signal })
    : await selfManagedCertificates(client, {
      ...options.certificates,
      name,
      namespace,
      signal,
    });
  let server: WebhookServer;
  try {
    server = await startWebhookServer({
      ...options.server,
      webhooks,
      certificate: certificates.current,
      port: options.port ?? 9443,
      hostname: options.hostname ?? (options.local ? "127.0.0.1" : "0.0.0.0"),
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
      patchCaBundle(client, name, cert.caBundlePem).catch(() => {});
    }
  });
  const close = async () => {
    await certificates[Symbol.asyncDispose]();
    await server.shutdown();
  };
  try {
    if (options.local) {
      await registerWebhooks(client, webhooks, {
        name,
        target: { url: `https://127.0.0.1:${server.port}` },
        caBundle: certificates.current.caBundlePem || undefined,
        signal,
      });
    } else if (options.certDir && certificates.current.caBundlePem) {
      await patchCaBundle(client, name, certificates.current.caBundlePem, { signal });
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { server, certificates, close, [Symbol.asyncDispose]: close };
}
