/**
 * The transport seam: the one place that decides how a request reaches the API server. Two
 * carriers sit behind it, each in its own file behind the `Carrier` interface
 * (`_carrier.ts`): kubeno's own kept-alive HTTP/1.1 connections (`_http1.ts`) for one-shot
 * requests and watches, and Deno's `fetch` (`_fetch.ts`) for lists, pod streams, traced
 * requests and whatever needs a proxy, `tls-server-name` or `insecure-skip-tls-verify`
 * (the last two through the relays of `_sni_relay.ts`). Around either: credentials applied
 * per request and refreshed after a 401, deadlines, failures turned into `ApiError` /
 * `ConnectionError`, tracing spans and a hook for request metrics.
 *
 * @module
 */
import {
  ApiError,
  type ApiErrorTarget,
  ConnectionError,
  type Status,
} from "../errors/api_error.ts";
import type { ClusterAccess, Credentials } from "../kubeconfig/kubeconfig.ts";
import { inSpan, tracing } from "../../util/trace.ts";
import { Http1Carrier, type Http1Opened, type Http1Response } from "./_http1.ts";
import { cancelledBy, FetchCarrier } from "./_fetch.ts";
import { TransportError } from "./transport_error.ts";

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

/** Sends requests to one API server. Holds connections; close it when done. */
export class Transport {
  #access: ClusterAccess;
  #options: TransportOptions;
  #host: string;
  /** Lists, pod streams, traced requests, and all of them where HTTP/1.1 is not available. */
  #fetch: FetchCarrier;
  /**
   * One-shot requests and watches over kubeno's own HTTP/1.1 connections (`_http1.ts`);
   * undefined where fetch must carry them (a proxy, `tls-server-name`,
   * `insecure-skip-tls-verify`, plain HTTP).
   */
  #http1: Http1Carrier | undefined;
  readonly #headerCache = new WeakMap<Credentials, Map<string, HeadersInit>>();
  readonly #lists = new WeakMap<object, [string, string][]>();
  readonly #deadlines = new Map<string, AbortSignal>();
  readonly #combined = new WeakMap<AbortSignal, { timeout: AbortSignal; either: AbortSignal }>();

  constructor(access: ClusterAccess, options: TransportOptions) {
    this.#access = access;
    this.#options = options;
    const url = new URL(access.server);
    this.#host = url.host;
    this.#fetch = new FetchCarrier(access);
    if (
      url.protocol === "https:" && !access.proxy && !access.tlsServerName &&
      !access.insecureSkipTlsVerify && !environmentProxy()
    ) {
      this.#http1 = new Http1Carrier(access.server, access.caCerts);
    }
  }

  /** The API server's base URL. */
  get server(): string {
    return this.#access.server;
  }

  /** Closes every connection and relay; later requests fail. */
  close(): void {
    this.#fetch.close();
    this.#http1?.close();
  }

  /**
   * Closes the pooled connections but keeps the transport usable: the next request opens a
   * fresh connection. When the network path is stalled, the pool's idle keep-alive connections
   * are dead too; a watch restarted after a stall must not reuse one. Open watches on kubeno's
   * own connections keep theirs: each ends by its own signal (a stalled one by its watchdog).
   */
  resetConnections(): void {
    this.#fetch.reset();
    this.#http1?.reset();
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
    return this.#http1 !== undefined && spec.target.verb !== "list" &&
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
      this.#http1 === undefined || spec.acceptEncoding !== "identity" ||
      spec.body !== undefined || tracing()
    ) {
      const res = await this.send(spec);
      return res.body ? cancelledBy(res.body, spec.signal) : emptyBody();
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
      res = await this.#http1!.send({
        method: spec.method,
        path: spec.path,
        headers: this.#headerList(spec, creds, body !== undefined),
        body,
        signal,
        cert: creds.cert,
        key: creds.key,
        stream,
      });
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
            new TransportError(
              `header ${JSON.stringify(k)} holds a line break; check the credentials`,
            ),
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
      res = await this.#fetch.send({
        method: spec.method,
        path: spec.path,
        headers: this.#headers(spec, creds, body !== undefined),
        body,
        signal,
        cert: creds.cert,
        key: creds.key,
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
    const client = await this.#fetch.client(creds.cert, creds.key);
    const url = this.#fetch.webSocketUrl(path);
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
            new TransportError((e as ErrorEvent).message || "WebSocket handshake failed"),
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
          new TransportError(`invalid JSON in the response: ${e.message}`),
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
        new TransportError(`invalid JSON in the response: ${(e as Error).message}`),
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
        new TransportError(`no response within ${timeoutMs} ms`, { cause: e }),
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
