/**
 * HTTP/1.1 over kubeno's own TLS connections (`Deno.startTls` over a TCP connection with
 * `TCP_NODELAY`, or `Deno.connectTls` to present a client certificate), for the API server's
 * one-shot requests (a get, a write, a delete) and its watches: the request written in one
 * piece, a one-shot response read whole into one string, a watch's body handed on as it
 * arrives, a read of the connection at a time, and the connection kept for the next request.
 * `fetch` builds a `Request`, `Headers`, an abort signal and body streams for each of them;
 * measured against a local TLS server, this path spent 90–110 µs of CPU per request against
 * fetch's 280–290 µs (HTTP/1.1 both), and an operator sends thousands of them in a full sync
 * and receives as many watch events.
 *
 * Lists, pod streams, proxies, `tls-server-name`, `insecure-skip-tls-verify` and traced
 * requests keep using `fetch` (`_fetch.ts`); `transport.ts` decides.
 *
 * @module
 */
import type { Carrier, CarrierRequest } from "./_carrier.ts";
import { TransportError } from "./transport_error.ts";

/** Where and how the pool connects. */
export interface Http1Target {
  /** Host name or IP (without brackets), checked against the server's certificate. */
  hostname: string;
  /** Port. */
  port: number;
  /** CA certificates (PEM); the system's roots when empty. */
  caCerts: string[];
  /** Client certificate and key (PEM), when the credentials have one. */
  cert?: string;
  key?: string;
}

/** One request: the headers are written as given (a list keeps repeated names apart). */
export interface Http1Request {
  method: string;
  /** Path and query string, starting with `/`. */
  path: string;
  headers: [string, string][];
  body?: string;
  signal?: AbortSignal;
}

/** A response read to its end. */
export interface Http1Response {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Map<string, string>;
  body: string;
}

/**
 * A response opened by {@linkcode Http1Pool.open}: a 2xx one with its body still to come, any
 * other read to its end.
 */
export type Http1Opened =
  | {
    status: number;
    headers: Map<string, string>;
    /**
     * The body's bytes, a piece per read of the connection that completed any. Iterate it
     * once; stopping early or the request's signal aborting closes the connection.
     */
    chunks: AsyncIterable<Uint8Array>;
  }
  | Http1Response;

/** How a response's body is framed, from its head. */
interface Head {
  status: number;
  headers: Map<string, string>;
  /** Whether the connection can carry another request once the body is read. */
  keep: boolean;
  framing: "none" | "chunked" | "length" | "eof";
  length: number;
}

// The runtime sets up its TLS crypto once per process, on first use: 40–42 ms on this machine
// (the first `Deno.startTls` or WebCrypto key generation; the second takes under 2 ms), and the
// first connection of an operator's start-up waited for it. A key generation started here, while
// the rest of the program's modules load, does it on one of the runtime's worker threads, not
// on the JS thread: the converge operator's spawn → ready went from 181 to 142 ms (medians of 8,
// BENCHMARKS.md "Start → ready"). A program that never connects pays it in that thread's CPU and
// about 1.5 MiB of RSS.
crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]).catch(() => {});

const CRLF = [13, 10];
const CRLF_CRLF = [13, 10, 13, 10];
const MAX_HEAD = 64 * 1024;
const MAX_IDLE = 32;
/**
 * How long a connection may sit idle before it is closed rather than reused: under the API
 * server's own idle timeout (90 s, as client-go's transport), so a request rarely meets a
 * connection the server is closing.
 */
const IDLE_TIMEOUT_MS = 45_000;
const encoder = new TextEncoder();
const utf8 = new TextDecoder();
const latin1 = new TextDecoder("latin1");

/** The server closed the connection before any byte of the response. */
class ClosedBeforeResponse extends TransportError {}

/** One kept-alive connection and the bytes read past the last response. */
class Connection {
  readonly conn: Deno.TlsConn;
  #buf = new Uint8Array(16 * 1024);
  #start = 0;
  #end = 0;
  /** Requests sent on it; a reused connection may have been closed by the server meanwhile. */
  uses = 0;
  /** When it last went back to the idle connections (`performance.now()`). */
  idleSince = 0;

  constructor(conn: Deno.TlsConn) {
    this.conn = conn;
  }

  close(): void {
    try {
      this.conn.close();
    } catch { /* already closed */ }
  }

  async write(data: Uint8Array): Promise<void> {
    for (let off = 0; off < data.length;) off += await this.conn.write(data.subarray(off));
  }

  /** Reads more bytes into the buffer; false at the end of the stream. */
  async #fill(): Promise<boolean> {
    if (this.#start > 0 && this.#start === this.#end) this.#start = this.#end = 0;
    if (this.#end === this.#buf.length) {
      const live = this.#end - this.#start;
      if (live * 2 > this.#buf.length) {
        const next = new Uint8Array(this.#buf.length * 2);
        next.set(this.#buf.subarray(this.#start, this.#end), 0);
        this.#buf = next;
      } else {
        this.#buf.copyWithin(0, this.#start, this.#end);
      }
      this.#start = 0;
      this.#end = live;
    }
    const n = await this.conn.read(this.#buf.subarray(this.#end));
    if (n === null) return false;
    this.#end += n;
    return true;
  }

  /** Reads a response's status line and headers. */
  async readHead(noBody: boolean): Promise<Head> {
    let headEnd = -1;
    // Searched so far, from #start: #fill may move the unread bytes to the buffer's start.
    let scanned = 0;
    for (;;) {
      headEnd = indexOf(this.#buf, CRLF_CRLF, this.#start + scanned, this.#end);
      if (headEnd >= 0) break;
      scanned = Math.max(0, this.#end - this.#start - 3);
      if (this.#end - this.#start > MAX_HEAD) {
        throw new TransportError("response headers over 64 KiB");
      }
      const hadBytes = this.#end > this.#start;
      if (!(await this.#fill())) {
        if (!hadBytes) throw new ClosedBeforeResponse("connection closed before the response");
        throw new TransportError("connection closed inside the response headers");
      }
    }
    const head = latin1.decode(this.#buf.subarray(this.#start, headEnd));
    this.#start = headEnd + 4;
    const lines = head.split("\r\n");
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
    if (!m) {
      throw new TransportError(
        `not an HTTP/1.1 response: ${JSON.stringify(lines[0].slice(0, 40))}`,
      );
    }
    const status = Number(m[1]);
    const headers = new Map<string, string>();
    for (let i = 1; i < lines.length; i++) {
      const colon = lines[i].indexOf(":");
      if (colon > 0) {
        headers.set(
          lines[i].slice(0, colon).trim().toLowerCase(),
          lines[i].slice(colon + 1).trim(),
        );
      }
    }
    const keep = !/\bclose\b/i.test(headers.get("connection") ?? "") && lines[0][7] === "1";
    const length = headers.get("content-length");
    if (noBody || status === 204 || status === 304 || (status >= 100 && status < 200)) {
      return { status, headers, keep, framing: "none", length: 0 };
    }
    if (/\bchunked\b/i.test(headers.get("transfer-encoding") ?? "")) {
      return { status, headers, keep, framing: "chunked", length: 0 };
    }
    if (length !== undefined) {
      const n = Number(length);
      if (!Number.isSafeInteger(n) || n < 0) {
        throw new TransportError(`bad Content-Length ${length}`);
      }
      return { status, headers, keep, framing: "length", length: n };
    }
    return { status, headers, keep: false, framing: "eof", length: 0 };
  }

  /** Reads the body `head` announced, whole, and decodes its content encoding. */
  async readBody(head: Head): Promise<string> {
    let bytes: Uint8Array;
    if (head.framing === "none") bytes = new Uint8Array(0);
    else if (head.framing === "chunked") bytes = await this.#chunked();
    else if (head.framing === "length") bytes = await this.#exactly(head.length);
    else bytes = await this.#toEnd();
    const encoding = head.headers.get("content-encoding");
    if (encoding && encoding !== "identity") {
      if (encoding !== "gzip" && encoding !== "deflate") {
        throw new TransportError(`unsupported Content-Encoding ${encoding}`);
      }
      const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream()
        .pipeThrough(new DecompressionStream(encoding));
      bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    }
    return utf8.decode(bytes);
  }

  /**
   * Reads the body `head` announced as it arrives: after each read of the connection, every
   * body byte it completed, in one piece (a watch's events, several to a read when they come
   * fast). Only an identity-encoded body can be read this way.
   */
  async *streamBody(head: Head): AsyncGenerator<Uint8Array, void, undefined> {
    const encoding = head.headers.get("content-encoding");
    if (encoding && encoding !== "identity") {
      throw new TransportError(`unsupported Content-Encoding ${encoding} for a streamed body`);
    }
    if (head.framing === "none") return;
    if (head.framing === "chunked") return yield* this.#chunkedPieces();
    let left = head.framing === "length" ? head.length : Infinity;
    while (left > 0) {
      if (this.#start === this.#end && !(await this.#fill())) {
        if (left === Infinity) return;
        throw new TransportError(`connection closed with ${left} body bytes to come`);
      }
      const take = Math.min(left, this.#end - this.#start);
      const piece = this.#buf.slice(this.#start, this.#start + take);
      this.#start += take;
      left -= take;
      yield piece;
    }
  }

  /**
   * A chunked body's data as it arrives: the chunks (and parts of chunks) that each read
   * completed, joined. Ends after the last chunk and its trailers.
   */
  async *#chunkedPieces(): AsyncGenerator<Uint8Array, void, undefined> {
    // Bytes of the current chunk still to come; -1 when its closing CRLF is next.
    let left = 0;
    for (;;) {
      const parts: Uint8Array[] = [];
      let total = 0;
      let last = false;
      for (;;) {
        if (left > 0) {
          const take = Math.min(left, this.#end - this.#start);
          if (take === 0) break;
          parts.push(this.#buf.subarray(this.#start, this.#start + take));
          total += take;
          this.#start += take;
          left -= take;
          if (left === 0) left = -1;
          continue;
        }
        const at = indexOf(this.#buf, CRLF, this.#start, this.#end);
        if (at < 0) {
          if (this.#end - this.#start > MAX_HEAD) {
            throw new TransportError("chunk header over 64 KiB");
          }
          break;
        }
        const line = latin1.decode(this.#buf.subarray(this.#start, at));
        this.#start = at + 2;
        if (left === -1) {
          if (line !== "") throw new TransportError("bad chunk terminator");
          left = 0;
          continue;
        }
        const size = parseInt(line.split(";")[0], 16);
        if (!Number.isSafeInteger(size) || size < 0) throw new TransportError("bad chunk size");
        if (size === 0) {
          last = true;
          break;
        }
        left = size;
      }
      // The parts are views into the buffer, which the next read may overwrite: one copy.
      if (total > 0) yield parts.length === 1 ? parts[0].slice() : join(parts, total);
      if (last) {
        while ((await this.#line()) !== ""); // trailers
        return;
      }
      if (!(await this.#fill())) {
        throw new TransportError("connection closed inside a chunked body");
      }
    }
  }

  async #exactly(n: number): Promise<Uint8Array> {
    const out = new Uint8Array(n);
    let got = 0;
    while (got < n) {
      if (this.#start === this.#end && n - got >= this.#buf.length) {
        // A large remainder is read straight into its place, as much as each read gives.
        const r = await this.conn.read(out.subarray(got));
        if (r === null) {
          throw new TransportError(`connection closed after ${got} of ${n} body bytes`);
        }
        got += r;
        continue;
      }
      if (this.#start === this.#end && !(await this.#fill())) {
        throw new TransportError(`connection closed after ${got} of ${n} body bytes`);
      }
      const take = Math.min(n - got, this.#end - this.#start);
      out.set(this.#buf.subarray(this.#start, this.#start + take), got);
      this.#start += take;
      got += take;
    }
    return out;
  }

  async #line(): Promise<string> {
    for (;;) {
      const at = indexOf(this.#buf, CRLF, this.#start, this.#end);
      if (at >= 0) {
        const line = latin1.decode(this.#buf.subarray(this.#start, at));
        this.#start = at + 2;
        return line;
      }
      if (this.#end - this.#start > MAX_HEAD) throw new TransportError("chunk header over 64 KiB");
      if (!(await this.#fill())) {
        throw new TransportError("connection closed inside a chunked body");
      }
    }
  }

  async #chunked(): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const size = parseInt((await this.#line()).split(";")[0], 16);
      if (!Number.isSafeInteger(size) || size < 0) throw new TransportError("bad chunk size");
      if (size === 0) {
        while ((await this.#line()) !== ""); // trailers
        break;
      }
      const part = await this.#exactly(size);
      parts.push(part);
      total += size;
      if ((await this.#line()) !== "") throw new TransportError("bad chunk terminator");
    }
    return parts.length === 1 ? parts[0] : join(parts, total);
  }

  async #toEnd(): Promise<Uint8Array> {
    while (await this.#fill());
    const out = this.#buf.slice(this.#start, this.#end);
    this.#start = this.#end;
    return out;
  }
}

function join(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function indexOf(buf: Uint8Array, needle: number[], from: number, to: number): number {
  const first = needle[0];
  for (
    let i = buf.indexOf(first, from);
    i >= 0 && i + needle.length <= to;
    i = buf.indexOf(first, i + 1)
  ) {
    let ok = true;
    for (let j = 1; j < needle.length; j++) {
      if (buf[i + j] !== needle[j]) {
        ok = false;
        break;
      }
    }
    if (ok) return i;
  }
  return -1;
}

/**
 * A TLS connection with `TCP_NODELAY` set before the handshake. `Deno.connectTls` leaves
 * Nagle's algorithm on, and the client's last handshake flight, written in two pieces, then
 * waits for the server's delayed ACK: 43–47 ms per new connection to a kube-apiserver on
 * loopback, against 1.3–4.3 ms with `TCP_NODELAY` (BENCHMARKS.md, "New connections"). Only
 * without a client certificate: `Deno.startTls` cannot present one (Deno 2.9), so a kubeconfig
 * with a client certificate keeps `Deno.connectTls` and the wait.
 */
async function connectNoDelay(t: Http1Target): Promise<Deno.TlsConn> {
  const tcp = await Deno.connect({ hostname: t.hostname, port: t.port });
  try {
    tcp.setNoDelay(true);
    return await Deno.startTls(tcp, {
      hostname: t.hostname,
      caCerts: t.caCerts.length ? t.caCerts : undefined,
    });
  } catch (e) {
    try {
      tcp.close();
    } catch { /* consumed by startTls */ }
    throw e;
  }
}

/** Kept-alive TLS connections to one server with one client certificate. */
export class Http1Pool {
  readonly #target: Http1Target;
  readonly #hostHeader: string;
  #idle: Connection[] = [];
  #busy = new Set<Connection>();
  /** Connections carrying a streamed body (watches): closed with the pool, not by `reset`. */
  #streaming = new Set<Connection>();
  #closed = false;

  constructor(target: Http1Target, hostHeader: string) {
    this.#target = target;
    this.#hostHeader = hostHeader;
  }

  /** Closes every connection; requests in flight and streams fail. */
  close(): void {
    this.#closed = true;
    this.reset();
    for (const c of this.#streaming) c.close();
    this.#streaming.clear();
  }

  /**
   * Closes the idle connections and the one-shot requests' in flight; the next request opens
   * a new one. Streams keep theirs: each has its own signal, and a stalled one is aborted by
   * its owner.
   */
  reset(): void {
    for (const c of this.#idle) c.close();
    for (const c of this.#busy) c.close();
    this.#idle = [];
    this.#busy.clear();
  }

  /** A new connection; `signal` aborting gives up on it (closed once it opens). */
  async #connect(signal: AbortSignal | undefined): Promise<Connection> {
    const t = this.#target;
    const opening = t.cert && t.key
      ? Deno.connectTls({
        hostname: t.hostname,
        port: t.port,
        caCerts: t.caCerts.length ? t.caCerts : undefined,
        cert: t.cert,
        key: t.key,
      })
      : connectNoDelay(t);
    if (!signal) return new Connection(await opening);
    let onAbort = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      return new Connection(await Promise.race([opening, aborted]));
    } catch (e) {
      opening.then((conn) => conn.close(), () => {});
      throw e;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Sends `req` and reads its response. A kept-alive connection that the server closed before
   * answering (an idle timeout racing the request) is retried on the next one, and at the last
   * on a new one: only a new connection's failure is the request's.
   *
   * @throws The signal's reason when it aborted; otherwise what the connection failed with.
   */
  async request(req: Http1Request): Promise<Http1Response> {
    const { c, head } = await this.#send(req);
    let keep = false;
    const onAbort = () => c.close();
    req.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const body = await c.readBody(head);
      keep = head.keep;
      return { status: head.status, headers: head.headers, body };
    } catch (e) {
      throw req.signal?.aborted ? req.signal.reason : e;
    } finally {
      req.signal?.removeEventListener("abort", onAbort);
      this.#release(c, keep);
    }
  }

  /**
   * Sends `req` and reads its response's head; a 2xx body is then read as it arrives (a
   * watch), any other whole. Retried as {@linkcode Http1Pool.request} is.
   *
   * @throws The signal's reason when it aborted; otherwise what the connection failed with.
   */
  async open(req: Http1Request): Promise<Http1Opened> {
    const { c, head } = await this.#send(req);
    if (head.status < 200 || head.status > 299) {
      let keep = false;
      try {
        const body = await c.readBody(head);
        keep = head.keep;
        return { status: head.status, headers: head.headers, body };
      } finally {
        this.#release(c, keep);
      }
    }
    this.#busy.delete(c);
    this.#streaming.add(c);
    // Registered now, not when the body is first read: an abort before that closes it too.
    const onAbort = () => {
      this.#streaming.delete(c);
      c.close();
    };
    req.signal?.addEventListener("abort", onAbort, { once: true });
    const chunks = this.#chunks(req.signal, c, head, onAbort);
    return { status: head.status, headers: head.headers, chunks };
  }

  /** The body of a stream opened on `c`; the connection is kept when it was read to its end. */
  async *#chunks(
    signal: AbortSignal | undefined,
    c: Connection,
    head: Head,
    onAbort: () => void,
  ): AsyncGenerator<Uint8Array> {
    let keep = false;
    try {
      if (signal?.aborted) throw signal.reason;
      yield* c.streamBody(head);
      keep = head.keep;
    } catch (e) {
      throw signal?.aborted ? signal.reason : e;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#streaming.delete(c);
      this.#release(c, keep && !signal?.aborted);
    }
  }

  /** Writes `req` on a kept-alive or new connection and reads the response's head. */
  async #send(req: Http1Request): Promise<{ c: Connection; head: Head }> {
    const bytes = this.#serialize(req);
    for (;;) {
      if (this.#closed) throw new TransportError("Cannot send a request: the client is closed");
      req.signal?.throwIfAborted();
      const idle = this.#takeIdle();
      const reused = idle !== undefined;
      const c = idle ?? await this.#connect(req.signal);
      if (this.#closed) {
        c.close();
        throw new TransportError("Cannot send a request: the client is closed");
      }
      this.#busy.add(c);
      const onAbort = () => c.close();
      req.signal?.addEventListener("abort", onAbort, { once: true });
      try {
        c.uses++;
        await c.write(bytes);
        return { c, head: await c.readHead(req.method === "HEAD") };
      } catch (e) {
        this.#release(c, false);
        if (req.signal?.aborted) throw req.signal.reason;
        // Each retry takes another connection, so this ends: at the latest on a new one.
        const retry = reused &&
          (e instanceof ClosedBeforeResponse || e instanceof Deno.errors.ConnectionReset ||
            e instanceof Deno.errors.BrokenPipe || e instanceof Deno.errors.UnexpectedEof);
        if (!retry) throw e;
      } finally {
        req.signal?.removeEventListener("abort", onAbort);
      }
    }
  }

  /** The most recently used idle connection; those idle too long are closed on the way. */
  #takeIdle(): Connection | undefined {
    const now = performance.now();
    // Oldest first: the first still fresh ends the stale ones (and every one after it is fresh).
    const fresh = this.#idle.findIndex((c) => now - c.idleSince < IDLE_TIMEOUT_MS);
    const stale = fresh < 0 ? this.#idle.length : fresh;
    for (const c of this.#idle.splice(0, stale)) c.close();
    return this.#idle.pop();
  }

  /** Back to the idle connections when `keep`, closed otherwise. */
  #release(c: Connection, keep: boolean): void {
    this.#busy.delete(c);
    if (keep && !this.#closed && this.#idle.length < MAX_IDLE) {
      c.idleSince = performance.now();
      this.#idle.push(c);
    } else c.close();
  }

  /** The request's bytes; the caller has checked that no header holds a line break. */
  #serialize(req: Http1Request): Uint8Array {
    let head = `${req.method} ${req.path} HTTP/1.1\r\nHost: ${this.#hostHeader}\r\n`;
    for (const [k, v] of req.headers) head += `${k}: ${v}\r\n`;
    if (req.body === undefined) {
      const bodyless = req.method === "GET" || req.method === "HEAD";
      return encoder.encode(bodyless ? `${head}\r\n` : `${head}Content-Length: 0\r\n\r\n`);
    }
    const body = encoder.encode(req.body);
    const top = encoder.encode(`${head}Content-Length: ${body.length}\r\n\r\n`);
    const out = new Uint8Array(top.length + body.length);
    out.set(top);
    out.set(body, top.length);
    return out;
  }
}

/** What {@linkcode Http1Carrier.send} is asked: a request, read whole or as a stream. */
export interface Http1CarrierRequest extends CarrierRequest {
  /** Whether a 2xx body is handed on as it arrives (a watch) instead of read whole. */
  stream?: boolean;
  /** The headers as a list, checked for line breaks. */
  headers: [string, string][];
}

/**
 * The HTTP/1.1 transport: one {@linkcode Http1Pool} per client certificate to one server, for
 * one-shot requests and watches where no proxy or relay is in the way.
 */
export class Http1Carrier implements Carrier<Http1Response | Http1Opened> {
  readonly #server: URL;
  readonly #caCerts: string[];
  readonly #pools = new Map<string, Http1Pool>();
  /** The server URL's path prefix (e.g. a Rancher cluster proxy's), without a trailing `/`. */
  readonly #prefix: string;
  #closed = false;

  constructor(server: string, caCerts: string[]) {
    this.#server = new URL(server);
    this.#caCerts = caCerts;
    this.#prefix = this.#server.pathname.replace(/\/+$/, "");
  }

  /**
   * Sends `request` over a pooled connection of its client certificate.
   *
   * @throws {TransportError} When the carrier is closed or the response cannot be read.
   * @throws The signal's reason when `request.signal` aborted.
   */
  async send(request: Http1CarrierRequest): Promise<Http1Response | Http1Opened> {
    const pool = this.#pool(request.cert, request.key);
    const req = {
      method: request.method,
      path: this.#prefix + request.path,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
    };
    return await (request.stream ? pool.open(req) : pool.request(req));
  }

  /** Resets every pool: idle and one-shot connections close, streams keep theirs. */
  reset(): void {
    for (const p of this.#pools.values()) p.reset();
  }

  /** Closes every pool; later requests fail. */
  close(): void {
    this.#closed = true;
    for (const p of this.#pools.values()) p.close();
    this.#pools.clear();
  }

  #pool(cert: string | undefined, key: string | undefined): Http1Pool {
    if (this.#closed) throw new TransportError("Cannot send a request: the client is closed");
    const id = cert && key ? `${cert}\0${key}` : "";
    let pool = this.#pools.get(id);
    if (!pool) {
      const url = this.#server;
      pool = new Http1Pool({
        hostname: url.hostname.replace(/^\[|\]$/g, ""),
        port: Number(url.port || 443),
        caCerts: this.#caCerts,
        ...(cert && key ? { cert, key } : {}),
      }, url.host);
      this.#pools.set(id, pool);
    }
    return pool;
  }
}
