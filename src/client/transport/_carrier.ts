/**
 * What each way to the API server gives the transport seam (`transport.ts`): kubeno's own
 * HTTP/1.1 connections (`_http1.ts`) and Deno's `fetch` (`_fetch.ts`, which reaches a
 * `tls-server-name` or an insecure server through the relays of `_sni_relay.ts`). The seam
 * decides which one carries a request; each carrier only moves bytes.
 *
 * @module
 */

/** One request as a carrier sends it: headers built, body serialized, credentials chosen. */
export interface CarrierRequest {
  /** HTTP method. */
  method: string;
  /** Path and query string, starting with `/`, relative to the server URL. */
  path: string;
  /** The request's headers (a list keeps repeated ones apart). */
  headers: [string, string][] | HeadersInit;
  /** The serialized body. */
  body?: string;
  /** Ends the request, including reading its body. */
  signal?: AbortSignal;
  /** The client certificate (PEM), with `key`. */
  cert?: string;
  /** The client key (PEM), with `cert`. */
  key?: string;
}

/** One way to the API server; `R` is what it answers a request with. */
export interface Carrier<R> {
  /**
   * Sends one request.
   *
   * @throws {TransportError} When the carrier is closed or the exchange broke off.
   * @throws The signal's reason when `request.signal` aborted.
   */
  send(request: CarrierRequest): Promise<R>;
  /**
   * Closes the idle connections and those of one-shot requests in flight (streams keep theirs);
   * the carrier stays usable.
   */
  reset(): void;
  /** Closes every connection; later requests fail. */
  close(): void;
}
