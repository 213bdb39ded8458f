// The small HTTP(S) server behind /metrics and the health probes: kubebuilder-style bind
// addresses and a disposable handle on Deno.serve. A bind address without a host (`:8080`)
// listens on every interface of both families, as Go's `net.Listen("tcp", ":8080")` does:
// `[::]` with IPv4-mapped addresses, or `0.0.0.0` where IPv6 is unavailable.

/** A parsed bind address. */
export interface BindAddress {
  /** The interface to listen on; `0.0.0.0` for all (both families, see {@linkcode serveHttp}). */
  hostname: string;
  /** The port; 0 picks a free one. */
  port: number;
}

/**
 * Listens with `Deno.serve` on `hostname`; for all interfaces (`0.0.0.0`, `::` or empty) on
 * `[::]` first, which on Linux, macOS and Windows also accepts IPv4 unless the system makes
 * IPv6 sockets v6-only, and on `0.0.0.0` when IPv6 is unavailable (or not permitted).
 *
 * @param options `Deno.serve` options; `hostname` as parsed.
 * @param handler The handler.
 * @returns The server.
 * @throws {Deno.errors.AddrInUse} When the port is taken.
 */
export function serveDualStack(
  options: Deno.ServeTcpOptions & Partial<Deno.TlsCertifiedKeyPem>,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): Deno.HttpServer<Deno.NetAddr> {
  const any = !options.hostname || options.hostname === "0.0.0.0" || options.hostname === "::";
  if (!any) return Deno.serve(options as Deno.ServeTcpOptions, handler);
  try {
    return Deno.serve({ ...options, hostname: "::" } as Deno.ServeTcpOptions, handler);
  } catch (err) {
    if (err instanceof Deno.errors.AddrInUse) throw err;
    return Deno.serve({ ...options, hostname: "0.0.0.0" } as Deno.ServeTcpOptions, handler);
  }
}

/**
 * Parses a bind address as kubebuilder's `--metrics-bind-address` and
 * `--health-probe-bind-address` take it: `:8080` (all interfaces), `127.0.0.1:8081`,
 * `[::1]:8081`, `localhost:8081`, or `0` to disable.
 *
 * @param address The flag's value.
 * @returns The hostname and port, or `undefined` for `0`.
 * @throws {TypeError} When the address has no valid port.
 */
export function parseBindAddress(address: string): BindAddress | undefined {
  const a = address.trim();
  if (a === "0") return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(a);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new TypeError(
      `Cannot parse bind address "${address}": expected "[host]:port" (e.g. ":8080") or "0" to disable`,
    );
  }
  return { hostname: m[1] ?? (m[2] || "0.0.0.0"), port };
}

/** A running HTTP server for metrics or probes. Dispose of it to stop it. */
export class HttpEndpoint implements AsyncDisposable {
  /** The interface it listens on. */
  readonly hostname: string;
  /** The port it listens on (the real one when 0 was asked for). */
  readonly port: number;
  /** Resolves once the server has stopped. */
  readonly finished: Promise<void>;
  /** `http` or `https`. */
  readonly scheme: "http" | "https";
  #server: Deno.HttpServer<Deno.NetAddr>;

  /**
   * Use `serveMetrics` or `serveProbes`.
   *
   * @param server The running server.
   * @param scheme Whether it serves TLS.
   */
  constructor(server: Deno.HttpServer<Deno.NetAddr>, scheme: "http" | "https" = "http") {
    this.#server = server;
    this.hostname = server.addr.hostname;
    this.port = server.addr.port;
    this.finished = server.finished;
    this.scheme = scheme;
  }

  /**
   * The base URL, with a loopback host when listening on all interfaces.
   *
   * @returns E.g. `http://127.0.0.1:8080/`.
   */
  get url(): string {
    const host = this.hostname === "0.0.0.0" || this.hostname === "::"
      ? "127.0.0.1"
      : this.hostname.includes(":")
      ? `[${this.hostname}]`
      : this.hostname;
    return `${this.scheme}://${host}:${this.port}/`;
  }

  /**
   * Stops accepting connections and waits for requests in flight.
   *
   * @returns A promise that resolves once stopped.
   */
  async shutdown(): Promise<void> {
    await this.#server.shutdown();
  }

  /** Same as {@linkcode HttpEndpoint.shutdown}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.shutdown();
  }
}

/**
 * Serves `handler` on a bind address; `:PORT` listens on IPv6 and IPv4 alike (see
 * {@linkcode serveDualStack}).
 *
 * @param address A kubebuilder-style bind address, see {@linkcode parseBindAddress}.
 * @param handler Answers requests; a throw becomes a 500.
 * @param options A signal that stops the server, a name for errors, and a certificate and
 * key (PEM) to serve HTTPS.
 * @returns The server, or `undefined` for `0`.
 * @throws {TypeError} For an invalid address.
 * @throws {Deno.errors.AddrInUse} When the port is taken.
 */
export function serveHttp(
  address: string,
  handler: (req: Request) => Response | Promise<Response>,
  options: { signal?: AbortSignal; name: string; tls?: { cert: string; key: string } },
): Promise<HttpEndpoint | undefined> {
  const bind = parseBindAddress(address);
  if (!bind) return Promise.resolve(undefined);
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = serve(bind);
  } catch (err) {
    if (!(err instanceof Deno.errors.AddrInUse)) throw err;
    throw new Deno.errors.AddrInUse(
      `Cannot serve ${options.name} on "${address}": the address is already in use`,
      { cause: err },
    );
  }
  return Promise.resolve(new HttpEndpoint(server, options.tls ? "https" : "http"));

  function serve(bind: BindAddress) {
    return serveDualStack({
      hostname: bind.hostname,
      port: bind.port,
      signal: options.signal,
      ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
      onListen: () => {},
      onError: (err) =>
        new Response(
          `Cannot serve ${options.name}: ${err instanceof Error ? err.message : err}\n`,
          { status: 500 },
        ),
    }, handler);
  }
}
