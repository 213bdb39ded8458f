/**
 * `TransportError`: what broke inside one of the client's transports.
 *
 * @module
 */
import { KubenoError } from "../../util/error.ts";

/**
 * A transport could not carry a request: it was closed, the response was not HTTP it can
 * read, the connection ended inside it, or a proxy refused the tunnel. It reaches callers as
 * the `cause` of a `ConnectionError`, whose message quotes it.
 *
 * @example The message is the problem, one line
 * ```ts
 * import { TransportError } from "./transport_error.ts";
 * const err = new TransportError("bad chunk size");
 * if (err.name !== "TransportError" || err.message !== "bad chunk size") throw new Error();
 * ```
 */
export class TransportError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message What broke, one line.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TransportError";
  }
}
