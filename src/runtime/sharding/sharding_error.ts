/**
 * `ShardingError`, the sharding layer's one error.
 *
 * @module
 */
import { KubenoError } from "../../util/error.ts";

/**
 * The shard coordinator cannot count on its membership (lost, or its member Lease not renewed in time), or was misused (run twice).
 *
 * @example The one-line message
 * ```ts
 * import { ShardingError } from "./sharding_error.ts";
 * const err = new ShardingError("Cannot do it");
 * if (err.name !== "ShardingError" || err.message !== "Cannot do it") throw new Error(err.name);
 * ```
 */
export class ShardingError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message What failed, one line.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ShardingError";
  }
}
