/**
 * The operator's HTTPS admission server, whose certificate can be replaced while it runs.
 *
 * Flow: a TLS listener (`node:tls`, whose secure context can be swapped in place) accepts
 * connections on `hostname:port` and forwards the decrypted bytes to a `Deno.serve` HTTP
 * server on a private Unix socket, which runs {@linkcode admissionHandler}. `Deno.serve`
 * cannot change its certificate, and restarting a listener drops connections queued on the
 * old socket; splitting TLS from HTTP keeps one listening socket for the server's life.
 *
 * Guarantees: {@linkcode WebhookServer.setCertificate} applies to every handshake after it
 * returns, while established connections keep their session; a client that sends garbage,
 * stalls a handshake or idles is disconnected without affecting others; nothing here rejects
 * unhandled.
 *
 * @module
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import net from "node:net";
import tls from "node:tls";
import { getLogger } from "../util/log.ts";
import type { Admission } from "./admission.ts";
import { admissionHandler } from "./handler.ts";
import { CONVERSION_PATH, conversionHandler, type ConvertibleResource } from "./conversion.ts";

const log = getLogger(["kubeno", "webhook"]);

/** A serving certificate and its key, PEM. */
export interface TlsCertificate {
  /** The certificate (optionally followed by intermediates), PEM. */
  certPem: string;
  /** Its private key, PEM (PKCS#8, SEC1 or PKCS#1). */
  keyPem: string;
}

/** Options of {@linkcode startWebhookServer}. */
export interface WebhookServerOptions {
  /** The admissions to serve. */
  webhooks: readonly Admission[];
  /**
   * Multi-version resources whose conversion webhook is served at `/convert`.
   * @default [] (no `/convert`)
   */
  conversions?: readonly ConvertibleResource[];
  /** The certificate to start with; replace it with `setCertificate`. */
  certificate: TlsCertificate;
  /**
   * Port to listen on; `0` picks a free one.
   * @default 9443
   */
  port?: number;
  /**
   * Address to listen on; use `127.0.0.1` for local runs and tests.
   * @default every interface of both families (`::` with IPv4-mapped addresses, as Go's
   * `:9443`), or `0.0.0.0` where IPv6 is unavailable
   */
  hostname?: string;
  /**
   * Largest AdmissionReview body accepted, in bytes.
   * @default 7340032 (7 MiB, as controller-runtime)
   */
  maxBodyBytes?: number;
  /**
   * Longest time a request may take; the API server's `?timeout=` lowers it.
   * @default 30000
   */
  requestTimeoutMs?: number;
  /**
   * Told about every answered request (the webhook's path, the HTTP status, the seconds it
   * took), e.g. for controller-runtime's `controller_runtime_webhook_*` metrics.
   * @default none
   */
  onRequest?: (sample: { path: string; code: number; seconds: number }) => void;
  /**
   * Time allowed for a TLS handshake.
   * @default 10000
   */
  handshakeTimeoutMs?: number;
  /**
   * An idle connection is closed after this long.
   * @default 120000
   */
  idleTimeoutMs?: number;
  /** Shuts the server down when aborted. */
  signal?: AbortSignal;
}

/**
 * A running webhook server. Close it with `await using`, {@linkcode WebhookServer.shutdown}
 * or the `signal` it was started with.
 */
export class WebhookServer implements AsyncDisposable {
  #tls: tls.Server;
  #http: Deno.HttpServer;
  #dir: string;
  #sockets = new Set<net.Socket>();
  #cert: TlsCertificate;
  #closing: Promise<void> | undefined;
  /** The port listened on. */
  readonly port: number;
  /** The address listened on. */
  readonly hostname: string;
  /** The paths served, e.g. `["/mutate-apps-kubeno-dev-v1-myapp", ...]`. */
  readonly paths: readonly string[];

  /** @internal Use {@linkcode startWebhookServer}. */
  constructor(init: {
    tls: tls.Server;
    http: Deno.HttpServer;
    dir: string;
    sockets: Set<net.Socket>;
    cert: TlsCertificate;
    port: number;
    hostname: string;
    paths: string[];
  }) {
    this.#tls = init.tls;
    this.#http = init.http;
    this.#dir = init.dir;
    this.#sockets = init.sockets;
    this.#cert = init.cert;
    this.port = init.port;
    this.hostname = init.hostname;
    this.paths = Object.freeze([...init.paths]);
  }

  /** The certificate presented to new connections. */
  get certificate(): TlsCertificate {
    return this.#cert;
  }

  /**
   * Presents a new certificate to every connection that starts after this call; open
   * connections keep their session.
   *
   * @param cert The new certificate and key.
   * @throws {TypeError} When the certificate or key cannot be parsed or do not match (the old
   * certificate stays in use).
   */
  setCertificate(cert: TlsCertificate): void {
    checkCertificate(cert);
    this.#tls.setSecureContext({ cert: cert.certPem, key: cert.keyPem });
    this.#cert = cert;
  }

  /**
   * Stops accepting connections, lets requests in flight finish, then closes the rest.
   *
   * @returns Resolves once everything is closed.
   */
  shutdown(): Promise<void> {
    this.#closing ??= (async () => {
      // close() stops listening at once but calls back only when every connection is gone;
      // the API server keeps idle keep-alive connections open, so they are ended here.
      const closed = new Promise<void>((resolve) => this.#tls.close(() => resolve()));
      await this.#http.shutdown().catch(() => {});
      for (const s of this.#sockets) s.destroy();
      await closed;
      await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
    })();
    return this.#closing;
  }

  /** Same as {@linkcode WebhookServer.shutdown}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.shutdown();
  }
}

/**
 * Starts the HTTPS admission server for `webhooks`, one path per webhook.
 *
 * @param options Webhooks, certificate, address and limits.
 * @returns The running server.
 * @throws {TypeError} When the certificate is unusable or two webhooks share a path.
 * @throws {Deno.errors.AddrInUse} When the port is taken.
 *
 * @example Serve a validating webhook on loopback
 * ```ts
 * import { admission } from "./admission.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 * import { createCa, issueCert } from "../util/x509.ts";
 * import { startWebhookServer } from "./server.ts";
 *
 * const ca = await createCa("example-ca");
 * const cert = await issueCert({ commonName: "webhook", ipAddresses: ["127.0.0.1"], server: true }, ca);
 * await using server = await startWebhookServer({
 *   webhooks: [admission(ConfigMap, { validate: () => "never" })],
 *   certificate: { certPem: cert.certPem, keyPem: cert.keyPem },
 *   hostname: "127.0.0.1",
 *   port: 0,
 * });
 * using client = Deno.createHttpClient({ caCerts: [ca.certPem] });
 * const res = await fetch(`https://127.0.0.1:${server.port}/validate--v1-configmap`, {
 *   method: "POST",
 *   body: "{}",
 *   client,
 * });
 * if (res.status !== 400) throw new Error(await res.text());
 * await res.body?.cancel();
 * ```
 */
export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  checkCertificate(options.certificate);
  const admit = admissionHandler(options.webhooks, options);
  const conversions = options.conversions ?? [];
  const convert = conversions.length
    ? conversionHandler(conversions, { requestTimeoutMs: options.requestTimeoutMs })
    : undefined;
  const route = convert
    ? (req: Request) => new URL(req.url).pathname === CONVERSION_PATH ? convert(req) : admit(req)
    : admit;
  const observe = options.onRequest;
  const handler = observe
    ? async (req: Request) => {
      const started = performance.now();
      const res = await route(req);
      const seconds = (performance.now() - started) / 1000;
      observe({ path: new URL(req.url).pathname, code: res.status, seconds });
      return res;
    }
    : route;
  const dir = await Deno.makeTempDir({ prefix: "kubeno-webhook-" });
  await Deno.chmod(dir, 0o700).catch(() => {});
  const path = `${dir}/http.sock`;
  const http = Deno.serve({ path, onListen() {} }, handler);
  const sockets = new Set<net.Socket>();
  const idleMs = options.idleTimeoutMs ?? 120_000;

  const server = tls.createServer({
    cert: options.certificate.certPem,
    key: options.certificate.keyPem,
    ALPNProtocols: ["http/1.1"],
    handshakeTimeout: options.handshakeTimeoutMs ?? 10_000,
  }, (sock) => {
    const upstream = net.connect({ path });
    sockets.add(sock);
    sockets.add(upstream);
    const close = () => {
      sock.destroy();
      upstream.destroy();
      sockets.delete(sock);
      sockets.delete(upstream);
    };
    sock.setTimeout(idleMs, close);
    sock.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
    sock.pipe(upstream);
    upstream.pipe(sock);
  });
  server.on("tlsClientError", (err: Error, sock: tls.TLSSocket) => {
    log.debug("TLS handshake failed: {message}", { message: err.message });
    sock.destroy();
  });
  server.on(
    "error",
    (err: Error) => log.error("Webhook TLS server error: {message}", { message: err.message }),
  );

  const listen = (host: string) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 9443, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  let hostname = options.hostname ?? "::";
  try {
    try {
      await listen(hostname);
    } catch (err) {
      // No IPv6 here: every IPv4 interface instead.
      const code = (err as { code?: string }).code;
      if (options.hostname !== undefined || code === "EADDRINUSE") throw err;
      await listen(hostname = "0.0.0.0");
    }
  } catch (err) {
    await http.shutdown();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    if ((err as { code?: string }).code === "EADDRINUSE") {
      throw new Deno.errors.AddrInUse(
        `Cannot serve admission webhooks on port ${
          options.port ?? 9443
        }: the address is already in use`,
        { cause: err },
      );
    }
    throw err;
  }
  const port = (server.address() as net.AddressInfo).port;
  const paths = options.webhooks.flatMap((w) =>
    [w.mutating?.path, w.validating?.path].filter((p): p is string => !!p)
  );
  if (convert) paths.push(CONVERSION_PATH);
  const ws = new WebhookServer({
    tls: server,
    http,
    dir,
    sockets,
    cert: options.certificate,
    port,
    hostname,
    paths,
  });
  log.info("Serving {count} admission webhooks on https://{hostname}:{port}", {
    count: paths.length,
    hostname,
    port,
  });
  if (options.signal) {
    if (options.signal.aborted) await ws.shutdown();
    else options.signal.addEventListener("abort", () => void ws.shutdown(), { once: true });
  }
  return ws;
}

/**
 * Checks that a certificate and key parse and belong together.
 *
 * @param cert The certificate and key.
 * @returns The parsed leaf certificate.
 * @throws {TypeError} Naming what is wrong.
 *
 * @example Rejecting a mismatched key
 * ```ts
 * import { createCa } from "../util/x509.ts";
 * import { checkCertificate } from "./server.ts";
 * const a = await createCa("a");
 * const b = await createCa("b");
 * checkCertificate({ certPem: a.certPem, keyPem: a.keyPem });
 * let threw = false;
 * try {
 *   checkCertificate({ certPem: a.certPem, keyPem: b.keyPem });
 * } catch {
 *   threw = true;
 * }
 * if (!threw) throw new Error();
 * ```
 */
export function checkCertificate(cert: TlsCertificate): X509Certificate {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert.certPem);
  } catch (err) {
    throw new TypeError(`Cannot use the webhook certificate: ${(err as Error).message}`);
  }
  let matches = false;
  try {
    matches = x509.checkPrivateKey(createPrivateKey(cert.keyPem));
  } catch (err) {
    throw new TypeError(`Cannot use the webhook key: ${(err as Error).message}`);
  }
  if (!matches) {
    throw new TypeError(
      `Cannot use the webhook certificate: the key does not match certificate "${x509.subject}"`,
    );
  }
  return x509;
}
