/**
 * `KubenoError`, the base of every error kubeno throws on purpose: one `catch` with
 * `instanceof KubenoError` tells kubeno's own errors (each a subclass naming its concept:
 * `ApiError`, `ConnectionError`, `KubeconfigError`, `WatchError`, …) from bugs and from
 * errors of user code.
 *
 * @module
 */

/**
 * The base of kubeno's errors. Each subclass sets `name` to its own and keeps a one-line
 * message that names what failed; `cause` carries what it failed with.
 *
 * @example Branch on kubeno's errors
 * ```ts
 * import { KubenoError } from "./error.ts";
 * class ThingError extends KubenoError {
 *   constructor(message: string) {
 *     super(message);
 *     this.name = "ThingError";
 *   }
 * }
 * const err: unknown = new ThingError("Cannot do the thing");
 * if (!(err instanceof KubenoError) || err.name !== "ThingError") throw new Error("not kubeno's");
 * ```
 */
export class KubenoError extends Error {
  /**
   * Creates the error.
   *
   * @param message One line naming what failed.
   * @param options The standard `cause`.
   */
  constructor(message?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "KubenoError";
  }
}
