/**
 * The `fetch` transport: Deno's own `fetch` over one `Deno.HttpClient` per client
 * certificate, carrying the cluster CA, a proxy, and — through the relays of `_sni_relay.ts` —
 * `tls-server-name` and `insecure-skip-tls-verify`, which `Deno.HttpClient` cannot express.
 * It carries lists (whose large pages it receives compressed), pod streams (WebSockets), and
 * every request kubeno's own HTTP/1.1 connections (`_http1.ts`) cannot.
 *
 * @module
 */
import type { ClusterAccess } from "../kubeconfig/kubeconfig.ts";
import type { Carrier, CarrierRequest } from "./_carrier.ts";
import {
  type InsecureRelay,
  type SniRelay,
  startInsecureRelay,
  startSniRelay,
} from "./_sni_relay.ts";
import { TransportError } from "./transport_error.ts";

/**
 * The bytes of a streamed `fetch` body, the stream cancelled by `signal` itself. `fetch` ties
 * the body to the request's own signal, which follows `signal` only while that follower is
 * alive: once the `Request` is collected (at a full collection, within a minute here),
 * aborting `signal` no longer reaches the body, and its pending read holds the process until
 * the server sends something (a watch's next bookmark, up to a minute later). Measured: a
 * traced operator's exit waited 8–68 s after "Manager stopped". A listener on `signal` lives
 * as long as `signal` does.
 *
 * @param body The response body.
 * @param signal Cancels the body; after it aborted, the iteration throws its reason.
 * @returns The body's chunks; stopping early cancels the body.
 */
export async function* cancelledBy(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
): AsyncGenerator<Uint8Array, void, undefined> {
  const reader = body.getReader();
  const cancel = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", cancel, { once: true });
  let done = false;
  try {
    if (signal?.aborted) cancel();
    for (;;) {
      const chunk = await reader.read();
      signal?.throwIfAborted();
      if (chunk.done) return void (done = true);
      yield chunk.value;
    }
  } finally {
    signal?.removeEventListener("abort", cancel);
    if (!done) cancel();
  }
}

/** Requests over `fetch`: one `Deno.HttpClient` per client certificate, relays as needed. */
export class FetchCarrier implements Carrier<Response> {
  #access: ClusterAccess;
  /** Where requests go: the server, or with `tls-server-name` that name at the server's port. */
  #base: string;
  #relay: SniRelay | undefined;
  /** With `insecure-skip-tls-verify`: one relay per client certificate. */
  #insecure = new Map<string, Promise<InsecureRelay>>();
  #clients = new Map<string, Deno.HttpClient>();
  #closed = false;

  constructor(access: ClusterAccess) {
    this.#access = access;
    const url = new URL(access.server);
    this.#base = access.server;
    if (access.insecureSkipTlsVerify) {
      // Plain HTTP to the relay, which runs the TLS; the host only names the server.
      this.#base = `http://${url.host}${url.pathname}`.replace(/\/+$/, "");
    } else if (access.tlsServerName) {
      const target = new URL(access.server);
      target.hostname = access.tlsServerName;
      this.#base = target.href.replace(/\/+$/, "");
    }
  }

  /** Sends `request` with `fetch`; the response whatever its status. */
  async send(request: CarrierRequest): Promise<Response> {
    const client = await this.client(request.cert, request.key);
    return await fetch(this.#base + request.path, {
      method: request.method,
      headers: request.headers as HeadersInit,
      body: request.body,
      signal: request.signal,
      client,
    });
  }

  /** The WebSocket URL of `path` (the relays' address where one is in the way). */
  webSocketUrl(path: string): string {
    return this.#base.replace(/^http/, "ws") + path;
  }

  /** Closes every HTTP client; the relays stay for the next. */
  reset(): void {
    for (const c of this.#clients.values()) c.close();
    this.#clients.clear();
  }

  /** Closes every HTTP client and relay; later requests fail. */
  close(): void {
    this.#closed = true;
    this.reset();
    this.#relay?.close();
    this.#relay = undefined;
    for (const r of this.#insecure.values()) r.then((relay) => relay.close(), () => {});
    this.#insecure.clear();
  }

  /**
   * The `Deno.HttpClient` of a client certificate, made once.
   *
   * @throws {TransportError} When the carrier is closed.
   */
  async client(cert: string | undefined, key: string | undefined): Promise<Deno.HttpClient> {
    if (this.#closed) throw new TransportError("Cannot send a request: the client is closed");
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
    if (this.#closed) throw new TransportError("Cannot send a request: the client is closed");
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
}
