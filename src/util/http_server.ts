// The small HTTP server behind /metrics and the health probes: kubebuilder-style bind
// addresses and a disposable handle on Deno.serve.

/** A parsed bind address. */
export interface BindAddress {
  /** The interface to listen on; `0.0.0.0` for all. */
  hostname: string;
  /** The port; 0 picks a free one. */
  port: number;
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
  #server: Deno.HttpServer<Deno.NetAddr>;

  /**
   * Use `serveMetrics` or `serveProbes`.
   *
   * @param server The running server.
   */
  constructor(server: Deno.HttpServer<Deno.NetAddr>) {
    this.#server = server;
    this.hostname = server.addr.hostname;
    this.port = server.addr.port;
    this.finished = server.finished;
  }

  /**
   * The base URL, with a loopback host when listening on all interfaces.
   *
   * @returns E.g. `http://127.0.0.1:8080/`.
   */
  get url(): string {
    const host = this.hostname === "0.0.0.0"
      ? "127.0.0.1"
      : this.hostname === "::"
      ? "[::1]"
      : this.hostname.includes(":")
      ? `[${this.hostname}]`
      : this.hostname;
    return `http://${host}:${this.port}/`;
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
 * Serves `handler` on a bind address.
 *
 * @param address A kubebuilder-style bind address, see {@linkcode parseBindAddress}.
 * @param handler Answers requests; a throw becomes a 500.
 * @param options A signal that stops the server, and a name for errors.
 * @returns The server, or `undefined` for `0`.
 * @throws {TypeError} For an invalid address.
 * @throws {Deno.errors.AddrInUse} When the port is taken.
 */
export function serveHttp(
  address: string,
  handler: (req: Request) => Response | Promise<Response>,
  options: { signal?: AbortSignal; name: string },
): Promise<HttpEndpoint | undefined> {
  const bind = parseBindAddress(address);
  if (!bind) return Promise.resolve(undefined);
  const server = Deno.serve({
    hostname: bind.hostname,
    port: bind.port,
    signal: options.signal,
    onListen: () => {},
    onError: (err) =>
      new Response(`Cannot serve ${options.name}: ${err instanceof Error ? err.message : err}\n`, {
        status: 500,
      }),
  }, handler);
  return Promise.resolve(new HttpEndpoint(server));
}
