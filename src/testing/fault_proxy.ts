/**
 * A TCP proxy on loopback in front of an API server, for tests that need the network to
 * fail: drop every connection, or stall open streams while their sockets stay open.
 * Bytes pass through untouched, so TLS (and client certificates) work end to end; point
 * a kubeconfig's `server:` at {@linkcode FaultProxy.prototype.url}.
 *
 * @module
 */

/** Options for {@linkcode startFaultProxy}. */
export interface FaultProxyOptions {
  /** Where to forward: a URL such as `https://127.0.0.1:6443`, or `host:port`. */
  target: string;
  /**
   * Port to listen on; `0` picks a free one.
   * @default 0
   */
  port?: number;
}

interface Pair {
  down: Deno.Conn;
  up: Deno.Conn | undefined;
  closed: PromiseWithResolvers<void>;
  isClosed: boolean;
  stalled: PromiseWithResolvers<void> | undefined;
}

/**
 * A running fault proxy. Close it with `close()` or `await using`.
 *
 * Guarantees: `dropAll()` closes both sides of every open connection at once; after
 * `stall(true)`, no byte is forwarded in either direction on the connections that were open
 * then, and the proxy closes none of them, like a network path that died without a reset.
 * Connections made later work normally, as a fresh connection over a healthy path would.
 * With `failNewConnections(ms)`, connections made later are held silent for `ms` and closed;
 * with `delay(ms)`, every chunk on every connection is held `ms` before it is forwarded.
 *
 * @example Dropping connections
 * ```ts
 * import { startFaultProxy } from "./fault_proxy.ts";
 * // An upstream that answers one line per connection.
 * using upstream = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 * (async () => {
 *   for await (const c of upstream) c.write(new TextEncoder().encode("hi\n")).then(() => c.close()).catch(() => {});
 * })();
 * await using proxy = await startFaultProxy({ target: `127.0.0.1:${upstream.addr.port}` });
 * const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
 * const buf = new Uint8Array(3);
 * await conn.read(buf);
 * if (new TextDecoder().decode(buf) !== "hi\n" || proxy.acceptedConnections !== 1) throw new Error();
 * proxy.dropAll();
 * conn.close();
 * ```
 */
export class FaultProxy implements AsyncDisposable {
  /** The proxy's URL, with the target's scheme: e.g. `https://127.0.0.1:40123`. */
  readonly url: string;
  /** The port the proxy listens on. */
  readonly port: number;
  readonly #listener: Deno.TcpListener;
  readonly #target: { hostname: string; port: number };
  readonly #pairs = new Set<Pair>();
  readonly #serving: Promise<void>;
  #accepted = 0;
  #upstreamFailures = 0;
  #closed = false;
  #failNewAfterMs: number | undefined;
  #delayMs = 0;

  /**
   * Prefer {@linkcode startFaultProxy}.
   *
   * @param listener The listening socket.
   * @param target The upstream address.
   * @param scheme The URL scheme for {@linkcode FaultProxy.prototype.url}.
   */
  constructor(
    listener: Deno.TcpListener,
    target: { hostname: string; port: number },
    scheme: string,
  ) {
    this.#listener = listener;
    this.#target = target;
    this.port = listener.addr.port;
    this.url = `${scheme}://127.0.0.1:${this.port}`;
    this.#serving = this.#serve();
  }

  /**
   * Connections open now (accepted and not yet closed).
   *
   * @returns The count.
   */
  get openConnections(): number {
    return this.#pairs.size;
  }

  /**
   * Connections accepted since the start.
   *
   * @returns The count.
   */
  get acceptedConnections(): number {
    return this.#accepted;
  }

  /**
   * Accepted connections whose upstream could not be reached (they were closed at once).
   *
   * @returns The count.
   */
  get upstreamFailures(): number {
    return this.#upstreamFailures;
  }

  /**
   * Open connections that are stalled.
   *
   * @returns The count.
   */
  get stalledConnections(): number {
    let n = 0;
    for (const p of this.#pairs) if (p.stalled) n++;
    return n;
  }

  /**
   * Closes every open connection, both sides. New connections are accepted as usual.
   *
   * @returns How many connections were closed.
   */
  dropAll(): number {
    const n = this.#pairs.size;
    for (const p of [...this.#pairs]) this.#closePair(p);
    return n;
  }

  /**
   * Stops (`true`) forwarding bytes on every connection open now, keeping their sockets
   * open, or resumes (`false`) every stalled connection. Later connections are not stalled.
   *
   * @param on Whether to stall.
   * @returns How many connections changed state.
   */
  stall(on: boolean): number {
    let n = 0;
    for (const p of this.#pairs) {
      if (on && !p.stalled) {
        p.stalled = Promise.withResolvers();
        n++;
      } else if (!on && p.stalled) {
        p.stalled.resolve();
        p.stalled = undefined;
        n++;
      }
    }
    return n;
  }

  /**
   * Makes new connections fail slowly, as a dead address or a hung TLS handshake does: each
   * is accepted, held for `afterMs` without a byte in either direction, then closed.
   * `undefined` forwards new connections again. Open connections are not affected.
   *
   * @param afterMs How long each new connection is held before it is closed.
   */
  failNewConnections(afterMs: number | undefined): void {
    this.#failNewAfterMs = afterMs;
  }

  /**
   * Makes every connection slow, open ones too: each chunk of bytes, in either direction, is
   * held `ms` before it is forwarded (in order), as a distant or congested API server is.
   * `0` forwards at once again.
   *
   * @param ms How long each chunk is held, in milliseconds.
   */
  delay(ms: number): void {
    this.#delayMs = ms;
  }

  /**
   * Stops listening and closes every connection.
   *
   * @returns A promise that resolves once everything is closed.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      try {
        this.#listener.close();
      } catch { /* already closed */ }
      this.stall(false);
      this.dropAll();
    }
    await this.#serving;
  }

  /**
   * Same as {@linkcode FaultProxy.prototype.close}, for `await using`.
   *
   * @returns A promise that resolves once closed.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #serve(): Promise<void> {
    const handlers = new Set<Promise<void>>();
    try {
      for await (const down of this.#listener) {
        this.#accepted++;
        const h = this.#handle(down).finally(() => handlers.delete(h));
        handlers.add(h);
      }
    } catch {
      // The listener was closed.
    }
    await Promise.allSettled([...handlers]);
  }

  async #handle(down: Deno.Conn): Promise<void> {
    const pair: Pair = {
      down,
      up: undefined,
      closed: Promise.withResolvers(),
      isClosed: false,
      stalled: undefined,
    };
    this.#pairs.add(pair);
    const failAfter = this.#failNewAfterMs;
    if (failAfter !== undefined) {
      const timer = setTimeout(() => this.#closePair(pair), failAfter);
      await pair.closed.promise;
      clearTimeout(timer);
      return;
    }
    try {
      pair.up = await Deno.connect(this.#target);
    } catch {
      this.#upstreamFailures++;
      this.#closePair(pair);
      return;
    }
    if (pair.isClosed) {
      pair.up.close();
      return;
    }
    await Promise.allSettled([this.#pump(pair, down, pair.up), this.#pump(pair, pair.up, down)]);
    this.#closePair(pair);
  }

  async #pump(pair: Pair, from: Deno.Conn, to: Deno.Conn): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null || pair.isClosed) break;
        while (pair.stalled && !pair.isClosed) {
          await Promise.race([pair.stalled.promise, pair.closed.promise]);
        }
        if (pair.isClosed) break;
        if (this.#delayMs > 0) await new Promise((r) => setTimeout(r, this.#delayMs));
        if (pair.isClosed) break;
        for (let off = 0; off < n;) off += await to.write(buf.subarray(off, n));
      }
    } catch {
      // A side closed or reset: the pair is done.
    }
    this.#closePair(pair);
  }

  #closePair(pair: Pair): void {
    if (pair.isClosed) return;
    pair.isClosed = true;
    this.#pairs.delete(pair);
    pair.closed.resolve();
    for (const c of [pair.down, pair.up]) {
      try {
        c?.close();
      } catch { /* already closed */ }
    }
  }
}

/**
 * Starts a TCP proxy on `127.0.0.1` that forwards to `target`.
 *
 * @param options The upstream (`https://host:port` or `host:port`) and the local port.
 * @returns The running proxy.
 * @throws {TypeError} When `target` has no port.
 * @throws {Deno.errors.AddrInUse} When `port` is taken.
 *
 * @example Point a client at the proxy
 * ```ts ignore — starts a control plane (etcd and kube-apiserver) to proxy to
 * import { startFaultProxy } from "./fault_proxy.ts";
 * import { startControlPlane } from "./control_plane.ts";
 *
 * await using cp = await startControlPlane();
 * await using proxy = await startFaultProxy({ target: cp.server });
 * // write a kubeconfig whose server is proxy.url, then:
 * proxy.stall(true); // the client's open connections go silent; new ones work
 * proxy.stall(false);
 * proxy.dropAll(); // every connection is reset
 * ```
 */
export function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  try {
    return Promise.resolve(listen(options));
  } catch (err) {
    return Promise.reject(err);
  }
}

function listen(options: FaultProxyOptions): FaultProxy {
  const { target } = options;
  const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(target);
  const url = new URL(hasScheme ? target : `tcp://${target}`);
  const scheme = hasScheme ? url.protocol.slice(0, -1) : "https";
  const port = Number(url.port || (scheme === "https" ? 443 : scheme === "http" ? 80 : NaN));
  if (!Number.isInteger(port) || port <= 0) {
    throw new TypeError(`Cannot start fault proxy: target "${target}" has no port`);
  }
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const listener = Deno.listen({ hostname: "127.0.0.1", port: options.port ?? 0 });
  return new FaultProxy(listener, { hostname, port }, scheme);
}
