/**
 * The HTTP path to the API server: Deno's own `fetch` over a `Deno.HttpClient` that carries
 * the cluster CA and the client certificate, with credentials applied per request, failures
 * turned into `ApiError` / `ConnectionError`, and a hook for request metrics.
 *
 * @module
 */
import { ApiError, type ApiErrorTarget, ConnectionError, type Status } from "./api_error.ts";
import type { ClusterAccess, Credentials } from "./kubeconfig.ts";
import {
  type InsecureRelay,
  type SniRelay,
  startInsecureRelay,
  startSniRelay,
} from "./_sni_relay.ts";
import { inSpan, tracing } from "../util/trace.ts";
import { type Http1Opened, Http1Pool, type Http1Response } from "./_http1.ts";

/** What `onRequest` is told about each request once its response status is known. */
export interface RequestMetric {
  /** HTTP method, e.g. `GET`. */
  method: string;
  /** Kubernetes verb, e.g. `list` or `watch`. */
  verb: string;
  /** Host (and port) of the API server. */
  host: string;
  /** HTTP status code; 0 when no response arrived. */
  code: number;
  /** Milliseconds until the response headers arrived (or the failure). */
  durationMs: number;
}

/** One request for {@link Transport.send}. */
export interface RequestSpec {
  /** HTTP method. */
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path and query string, starting with `/`. */
  path: string;
  /** Body, serialized as JSON. */
  body?: unknown;
  /** Content type of the body. */
  contentType?: string;
  /**
   * `Accept` header, e.g. for `PartialObjectMetadata`.
   * @default "application/json"
   */
  accept?: string;
  /**
   * `Accept-Encoding` header. Watches ask for `identity`: from Kubernetes 1.37 a watch-list
   * response may be gzip-compressed with one gzip member per flush (`WatchListCompression`),
   * and `fetch` ends the body at the end of the first member.
   * @default fetch's own (gzip, br)
   */
  acceptEncoding?: string;
  /** What the request addresses, for errors. */
  target: ApiErrorTarget;
  /** Cancels the request, including reading its body. */
  signal?: AbortSignal;
  /** Deadline for the whole exchange including the body; `null` for none. */
  timeoutMs?: number | null;
}

/** Options of {@link Transport}. */
export interface TransportOptions {
  /** `User-Agent` header. */
  userAgent: string;
  /** Default deadline for non-streaming requests. */
  timeoutMs: number;
  /** Called once per request with its status code and latency. */
  onRequest?: (metric: RequestMetric) => void;
}

/** Sends requests to one API server. Holds `Deno.HttpClient`s; close it when done. */
export class Transport {
  #access: ClusterAccess;
  #options: TransportOptions;
  #host: string;
  /** Where requests go: the server, or with `tls-server-name` that name at the server's port. */
  #base: string;
  #relay: SniRelay | undefined;
  /** With `insecure-skip-tls-verify`: one relay per client certificate. */
  #insecure = new Map<string, Promise<InsecureRelay>>();
  #clients = new Map<string, Deno.HttpClient>();
  /**
   * One-shot requests and watches over kubeno's own HTTP/1.1 connections (`_http1.ts`), one
   * pool per client certificate; undefined where fetch must carry them (a proxy, `tls-server-name`,
   * `insecure-skip-tls-verify`, plain HTTP).
   */
  #pools: Map<string, Http1Pool> | undefined;
  /** The server URL's path prefix (e.g. a Rancher cluster proxy's), without a trailing `/`. */
  #prefix = "";
  #closed = false;
  readonly #headerCache = new WeakMap<Credentials, Map<string, HeadersInit>>();
  readonly #lists = new WeakMap<object, [string, string][]>();
  readonly #deadlines = new Map<string, AbortSignal>();
  readonly #combined = new WeakMap<AbortSignal, { timeout: AbortSignal; either: AbortSignal }>();

  constructor(access: ClusterAccess, options: TransportOptions) {
    this.#access = access;
    this.#options = options;
    const url = new URL(access.server);
    this.#host = url.host;
    this.#base = access.server;
    if (
      url.protocol === "https:" && !access.proxy && !access.tlsServerName &&
      !access.insecureSkipTlsVerify && !environmentProxy()
    ) {
      this.#pools = new Map();
      this.#prefix = url.pathname.replace(/\/+$/, "");
    }
    if (access.insecureSkipTlsVerify) {
      // Plain HTTP to the relay, which runs the TLS; the host only names the server.
      this.#base = `http://${url.host}${url.pathname}`.replace(/\/+$/, "");
    } else if (access.tlsServerName) {
      const target = new URL(access.server);
      target.hostname = access.tlsServerName;
      this.#base = target.href.replace(/\/+$/, "");
    }
  }

  /** The API server's base URL. */
  get server(): string {
    return this.#access.server;
  }

  /** Closes every HTTP client; later requests fail. */
  close(): void {
    this.#closed = true;
    for (const c of this.#clients.values()) c.close();
    this.#clients.clear();
    for (const p of this.#pools?.values() ?? []) p.close();
    this.#pools?.clear();
    this.#relay?.close();
    this.#relay = undefined;
    for (const r of this.#insecure.values()) r.then((relay) => relay.close(), () => {});
    this.#insecure.clear();
  }

  /**
   * Closes the pooled connections but keeps the transport usable: the next request opens a
   * fresh connection. When the network path is stalled, the pool's idle keep-alive connections
   * are dead too; a watch restarted after a stall must not reuse one. Open watches on kubeno's
   * own connections keep theirs: each ends by its own signal (a stalled one by its watchdog).
   */
  resetConnections(): void {
    for (const c of this.#clients.values()) c.close();
    this.#clients.clear();
    for (const p of this.#pools?.values() ?? []) p.reset();
  }

  #pool(cert: string | undefined, key: string | undefined): Http1Pool {
    if (this.#closed) throw new Error("Cannot send a request: the client is closed");
    const id = cert && key ? `${cert}\0${key}` : "";
    let pool = this.#pools!.get(id);
    if (!pool) {
      const url = new URL(this.#access.server);
      pool = new Http1Pool({
        hostname: url.hostname.replace(/^\[|\]$/g, ""),
        port: Number(url.port || 443),
        caCerts: this.#access.caCerts,
        ...(cert && key ? { cert, key } : {}),
      }, url.host);
      this.#pools!.set(id, pool);
    }
    return pool;
  }

  async #client(cert: string | undefined, key: string | undefined): Promise<Deno.HttpClient> {
    if (this.#closed) throw new Error("Cannot send a request: the client is closed");
    const id = cert && key ? `${cert}\0${key}` : "";
    let client = this.#clients.get(id);
    if (client) return client;
    let options: Deno.CreateHttpClientOptions;
    if (this.#access.insecureSkipTlsVerify) {
      const relay = await this.#insecureRelay(id, cert, key);
      options = { proxy: { transport: "unix", path: relay.path }, http2: false };
    } else {
      const proxy = this.#proxy();
      options = {
        caCerts: this.#access.caCerts.length ? this.#access.caCerts : undefined,
        ...(cert && key ? { cert, key } : {}),
        ...(proxy ? { proxy: { url: proxy } } : {}),
        // HTTP/1.1, one connection per request in flight, as kube-rs does: against one
        // multiplexed HTTP/2 connection it cost 0.84x the CPU and 0.87x the wall time of a
        // 2,000-object converge and halved the event latency's p99 (bench/ab_kubeno.ts,
        // BENCHMARKS.md).
        http1: true,
        http2: false,
      };
    }
    client = this.#clients.get(id);
    if (client) return client;
    if (this.#closed) throw new Error("Cannot send a request: the client is closed");
    client = Deno.createHttpClient(options);
    // Exec plugins may rotate client certificates; old clients stay open for the
    // streams still using them (one per rotation, closed with the transport).
    this.#clients.set(id, client);
    return client;
  }

  #insecureRelay(
    id: string,
    cert: string | undefined,
    key: string | undefined,
  ): Promise<InsecureRelay> {
    let relay = this.#insecure.get(id);
    if (!relay) {
      const url = new URL(this.#access.server);
      const hostname = url.hostname.replace(/^\[|\]$/g, "");
      const isIp = /^[0-9.]+$/.test(hostname) || hostname.includes(":");
      relay = startInsecureRelay({
        hostname,
        port: Number(url.port || 443),
        servername: this.#access.tlsServerName ?? (isIp ? undefined : hostname),
        cert: cert && key ? cert : undefined,
        key: cert && key ? key : undefined,
        proxy: this.#access.proxy,
      });
      relay.catch(() => this.#insecure.delete(id));
      this.#insecure.set(id, relay);
    }
    return relay;
  }

  #proxy(): string | undefined {
    if (!this.#access.tlsServerName) return this.#access.proxy;
    if (!this.#relay) {
      const url = new URL(this.#access.server);
      const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
      this.#relay = startSniRelay(url.hostname.replace(/^\[|\]$/g, ""), port, this.#access.proxy);
    }
    return this.#relay.url;
  }

  /**
   * Sends one request and returns the response when it is 2xx. After a 401 it asks the
   * credential source to refresh (re-read a token file, re-run an exec plugin) and, when that
   * gave different credentials, sends the request once more.
   *
   * @throws {ApiError} For a non-2xx response (its body is consumed).
   * @throws {ConnectionError} When no response arrived or the deadline passed.
   * @throws The signal's reason when `spec.signal` aborted.
   */
  send(spec: RequestSpec): Promise<Response> {
    if (!tracing()) return this.#sendOnce(spec);
    // Named for what it does to which resource (Deno's own `fetch` span, its child, names
    // only the URL); the status code is the server's answer, 0 when none arrived.
    const t = spec.target;
    return inSpan(`${t.verb} ${t.plural}${t.subresource ? `/${t.subresource}` : ""}`, {
      "http.request.method": spec.method,
      "kubeno.client.verb": t.verb,
      "k8s.kind": t.kind,
      "k8s.api_version": t.apiVersion,
      "k8s.resource": t.plural,
      "k8s.subresource": t.subresource,
      "k8s.namespace.name": t.namespace,
      "k8s.object.name": t.name,
    }, async (span) => {
      try {
        const res = await this.#sendOnce(spec);
        span.set({ "http.response.status_code": res.status });
        return res;
      } catch (e) {
        if (e instanceof ApiError) span.set({ "http.response.status_code": e.code });
        throw e;
      }
    });
  }

  #sendOnce(spec: RequestSpec): Promise<Response> {
    return this.#refreshing(spec, (creds) => this.#send(spec, creds));
  }

  /** Runs `exchange`, and once more with refreshed credentials after a 401 that refreshed. */
  async #refreshing<R>(
    spec: RequestSpec,
    exchange: (creds: Credentials) => Promise<R>,
  ): Promise<R> {
    const creds = await this.#access.credentials();
    try {
      return await exchange(creds);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 401) || !this.#access.invalidate) throw e;
      if (spec.signal?.aborted || !(await this.#access.invalidate(creds))) throw e;
    }
    return await exchange(await this.#access.credentials());
  }

  /**
   * Whether `spec` goes over kubeno's own HTTP/1.1 connections: a one-shot request read whole
   * (not a list, whose large pages fetch receives compressed), no proxy or relay in the way,
   * and no tracing (fetch's spans and trace context stay with traced requests).
   */
  #direct(spec: RequestSpec): boolean {
    return this.#pools !== undefined && spec.target.verb !== "list" &&
      spec.acceptEncoding === undefined && !tracing();
  }

  /**
   * Sends a request whose 2xx body is read as it arrives (a watch) and returns that body's
   * bytes. Over kubeno's own HTTP/1.1 connections where one-shot requests take them and the
   * body is asked for uncompressed (a watch asks for `identity`), over `fetch` otherwise.
   * Stopping the iteration early or aborting `spec.signal` ends the request.
   *
   * @throws {ApiError} For a non-2xx response (its body is consumed).
   * @throws {ConnectionError} When no response arrived.
   * @throws The signal's reason when `spec.signal` aborted.
   */
  async stream(spec: RequestSpec): Promise<AsyncIterable<Uint8Array>> {
    if (
      this.#pools === undefined || spec.acceptEncoding !== "identity" ||
      spec.body !== undefined || tracing()
    ) {
      const res = await this.send(spec);
      return res.body ?? emptyBody();
    }
    return await this.#refreshing(spec, (creds) => this.#open(spec, creds));
  }

  /** One streamed request over its own HTTP/1.1 connection; the 2xx body's bytes. */
  async #open(spec: RequestSpec, creds: Credentials): Promise<AsyncIterable<Uint8Array>> {
    return (await this.#overPool(spec, creds, true)) as AsyncIterable<Uint8Array>;
  }

  /** One request over a pooled HTTP/1.1 connection; the 2xx body as text. */
  async #exchange(spec: RequestSpec, creds: Credentials): Promise<string> {
    return (await this.#overPool(spec, creds, false)) as string;
  }

  /**
   * One request over kubeno's own HTTP/1.1 connections: its 2xx body read whole, or with
   * `stream` handed on as it arrives; any other status an `ApiError`.
   */
  async #overPool(
    spec: RequestSpec,
    creds: Credentials,
    stream: boolean,
  ): Promise<string | AsyncIterable<Uint8Array>> {
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const { signal, timeout, timeoutMs } = this.#signal(spec);
    const started = performance.now();
    let res: Http1Opened | Http1Response;
    try {
      const pool = this.#pool(creds.cert, creds.key);
      const req = {
        method: spec.method,
        path: this.#prefix + spec.path,
        headers: this.#headerList(spec, creds, body !== undefined),
        body,
        signal,
      };
      res = stream ? await pool.open(req) : await pool.request(req);
    } catch (e) {
      this.#report(spec, 0, started);
      throw this.#networkError(spec, e, timeout, timeoutMs);
    }
    this.#report(spec, res.status, started);
    if ("chunks" in res) return res.chunks; // a stream opened with a 2xx
    if (res.status >= 200 && res.status < 300) return res.body;
    throw ApiError.fromStatus(
      spec.target,
      res.status,
      parseStatus(res.body) ?? res.body,
      res.headers.get("retry-after") ?? null,
    );
  }

  /** {@link #headers} as a list for `_http1.ts`, refused when a value holds a line break. */
  #headerList(spec: RequestSpec, creds: Credentials, hasBody: boolean): [string, string][] {
    const init = this.#headers(spec, creds, hasBody, true);
    let list = this.#lists.get(init);
    if (!list) {
      list = (Array.isArray(init) ? init : Object.entries(init)) as [string, string][];
      for (const [k, v] of list) {
        if (/[\r\n]/.test(k) || /[\r\n]/.test(v)) {
          throw new ConnectionError(
            this.server,
            spec.target.verb,
            new Error(`header ${JSON.stringify(k)} holds a line break; check the credentials`),
          );
        }
      }
      this.#lists.set(init, list);
    }
    return list;
  }

  async #send(spec: RequestSpec, creds: Credentials): Promise<Response> {
    let body: string | undefined;
    if (spec.body !== undefined) body = JSON.stringify(spec.body);
    const { signal, timeout, timeoutMs } = this.#signal(spec);
    const started = performance.now();
    let res: Response;
    try {
      const client = await this.#client(creds.cert, creds.key);
      res = await fetch(this.#base + spec.path, {
        method: spec.method,
        headers: this.#headers(spec, creds, body !== undefined),
        body,
        signal,
        client,
      });
    } catch (e) {
      this.#report(spec, 0, started);
      throw this.#networkError(spec, e, timeout, timeoutMs);
    }
    this.#report(spec, res.status, started);
    if (res.ok) return res;
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw this.#networkError(spec, e, timeout, timeoutMs);
    }
    throw ApiError.fromStatus(
      spec.target,
      res.status,
      parseStatus(text) ?? text,
      res.headers.get("Retry-After"),
    );
  }

  /**
   * The request's headers, built once per credentials and kind of request (accept, encoding,
   * content type) and shared by every request of that kind: `fetch` copies them.
   */
  #headers(spec: RequestSpec, creds: Credentials, hasBody: boolean, direct = false): HeadersInit {
    // fetch asks for gzip and br by itself; kubeno's own HTTP/1.1 path asks for gzip, as
    // client-go does, and decodes it.
    const encoding = spec.acceptEncoding ??
      (this.#access.disableCompression ? "identity" : direct ? "gzip" : undefined);
    const accept = spec.accept ?? "application/json";
    const type = hasBody ? spec.contentType ?? "application/json" : undefined;
    const id = `${accept}\0${encoding ?? ""}\0${type ?? ""}`;
    let byKind = this.#headerCache.get(creds);
    if (!byKind) this.#headerCache.set(creds, byKind = new Map());
    let headers = byKind.get(id);
    if (headers) return headers;
    const h: Record<string, string> = {
      ...creds.headers,
      "Accept": accept,
      "User-Agent": this.#options.userAgent,
      ...(encoding ? { "Accept-Encoding": encoding } : {}),
      ...(type ? { "Content-Type": type } : {}),
    };
    // A list keeps repeated headers (Impersonate-Group…) apart, as client-go sends them.
    headers = creds.repeatedHeaders
      ? [...Object.entries(h), ...creds.repeatedHeaders.map(([k, v]) => [k, v] as [string, string])]
      : h;
    byKind.set(id, headers);
    return headers;
  }

  /** The request's signal (its own and its deadline), and the deadline, for the errors. */
  #signal(spec: RequestSpec): {
    signal: AbortSignal | undefined;
    timeout: AbortSignal | undefined;
    timeoutMs: number | null;
  } {
    const timeoutMs = spec.timeoutMs === undefined ? this.#options.timeoutMs : spec.timeoutMs;
    const timeout = timeoutMs === null ? undefined : this.#deadline(timeoutMs);
    const signal = spec.signal && timeout
      ? this.#either(spec.signal, timeout)
      : spec.signal ?? timeout;
    return { signal, timeout, timeoutMs };
  }

  /**
   * A signal that aborts `timeoutMs` from now. Long deadlines are shared: requests whose
   * deadlines fall into the same tenth of the deadline (at most a second) get one timer
   * between them, which fires up to that much late, instead of one timer each.
   */
  #deadline(timeoutMs: number): AbortSignal {
    if (timeoutMs < 2_000) return AbortSignal.timeout(timeoutMs);
    const step = Math.min(1_000, Math.floor(timeoutMs / 10));
    const now = performance.now();
    const slot = Math.ceil((now + timeoutMs) / step);
    const id = `${step}:${slot}`;
    let signal = this.#deadlines.get(id);
    if (!signal) {
      // Slots are made in time order: the oldest have fired and are dropped.
      for (const [k, s] of this.#deadlines) {
        if (!s.aborted) break;
        this.#deadlines.delete(k);
      }
      signal = AbortSignal.timeout(Math.max(0, Math.ceil(slot * step - now)));
      this.#deadlines.set(id, signal);
    }
    return signal;
  }

  /** `AbortSignal.any([signal, timeout])`, made once per pair (a reconcile's writes share it). */
  #either(signal: AbortSignal, timeout: AbortSignal): AbortSignal {
    const last = this.#combined.get(signal);
    if (last?.timeout === timeout) return last.either;
    const either = AbortSignal.any([signal, timeout]);
    this.#combined.set(signal, { timeout, either });
    return either;
  }

  /**
   * Opens a WebSocket to `path` with the request's credentials and TLS settings (the same
   * `Deno.HttpClient`: CA, client certificate, proxy, tls-server-name, insecure relay).
   *
   * @param path Path and query string.
   * @param protocols Subprotocols in order of preference.
   * @returns The open socket (binary frames as ArrayBuffers).
   * @throws {ConnectionError} When the handshake fails; the message carries the close reason.
   */
  async webSocket(path: string, protocols: string[]): Promise<WebSocket> {
    const creds = await this.#access.credentials();
    const client = await this.#client(creds.cert, creds.key);
    const url = this.#base.replace(/^http/, "ws") + path;
    const ws = new WebSocket(url, {
      protocols,
      headers: [
        ...Object.entries(creds.headers),
        ...(creds.repeatedHeaders ?? []).map(([k, v]) => [k, v]),
        ["User-Agent", this.#options.userAgent],
      ] as [string, string][],
      client,
    });
    ws.binaryType = "arraybuffer";
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = (e) =>
        reject(
          new ConnectionError(
            this.server,
            "connect",
            new Error((e as ErrorEvent).message || "WebSocket handshake failed"),
          ),
        );
    });
    ws.onerror = null;
    ws.onopen = null;
    return ws;
  }

  /**
   * Sends one request and parses the JSON body of the 2xx response.
   *
   * @throws {ApiError} For a non-2xx response.
   * @throws {ConnectionError} When no complete response arrived.
   */
  async json<R>(spec: RequestSpec): Promise<R> {
    if (this.#direct(spec)) {
      return this.parse<R>(spec, await this.#refreshing(spec, (c) => this.#exchange(spec, c)));
    }
    const res = await this.send(spec);
    try {
      return await res.json() as R;
    } catch (e) {
      if (e instanceof SyntaxError) {
        throw new ConnectionError(
          this.server,
          spec.target.verb,
          new Error(`invalid JSON in the response: ${e.message}`),
        );
      }
      throw this.#networkError(spec, e, undefined, null);
    }
  }

  /**
   * Sends one request and reads the body of the 2xx response as text, undecoded.
   *
   * @throws {ApiError} For a non-2xx response.
   * @throws {ConnectionError} When no complete response arrived.
   */
  async text(spec: RequestSpec): Promise<string> {
    if (this.#direct(spec)) return await this.#refreshing(spec, (c) => this.#exchange(spec, c));
    const res = await this.send(spec);
    try {
      return await res.text();
    } catch (e) {
      throw this.#networkError(spec, e, undefined, null);
    }
  }

  /**
   * Parses a body read by {@linkcode Transport.text}.
   *
   * @throws {ConnectionError} When it is not JSON.
   */
  parse<R>(spec: RequestSpec, text: string): R {
    try {
      return JSON.parse(text) as R;
    } catch (e) {
      throw new ConnectionError(
        this.server,
        spec.target.verb,
        new Error(`invalid JSON in the response: ${(e as Error).message}`),
      );
    }
  }

  /**
   * Turns a failure while reading a response body (e.g. a watch stream) into the error to
   * throw: the signal's reason when it aborted, otherwise a `ConnectionError`.
   *
   * @param spec The request.
   * @param e What the body reader threw.
   * @returns The error to throw.
   */
  networkError(spec: RequestSpec, e: unknown): unknown {
    return this.#networkError(spec, e, undefined, null);
  }

  #networkError(
    spec: RequestSpec,
    e: unknown,
    timeout: AbortSignal | undefined,
    timeoutMs: number | null,
  ): unknown {
    if (spec.signal?.aborted) return spec.signal.reason;
    if (e instanceof ApiError || e instanceof ConnectionError) return e;
    if (timeout?.aborted) {
      return new ConnectionError(
        this.server,
        spec.target.verb,
        new Error(`no response within ${timeoutMs} ms`, { cause: e }),
      );
    }
    return new ConnectionError(this.server, spec.target.verb, e);
  }

  #report(spec: RequestSpec, code: number, started: number): void {
    const hook = this.#options.onRequest;
    if (!hook) return;
    try {
      hook({
        method: spec.method,
        verb: spec.target.verb,
        host: this.#host,
        code,
        durationMs: performance.now() - started,
      });
    } catch {
      // A metrics hook must never break a request.
    }
  }
}

/**
 * Whether the environment names a proxy (`HTTPS_PROXY`, `ALL_PROXY`), which fetch honours by
 * itself and kubeno's own HTTP/1.1 path does not: with one set, every request takes fetch.
 */
function environmentProxy(): boolean {
  try {
    return ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"].some((k) => !!Deno.env.get(k));
  } catch {
    return true; // unreadable: assume one, and leave it to fetch
  }
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}

function parseStatus(text: string): Status | undefined {
  if (!text.startsWith("{")) return undefined;
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" && v.kind === "Status" ? v as Status : undefined;
  } catch {
    return undefined;
  }
}
