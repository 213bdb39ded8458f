/**
 * `ControllerError`, the controller layer's error for its own lifecycle.
 *
 * @module
 */
import { KubenoError } from "../../util/error.ts";

/**
 * A controller's lifecycle was misused or ended it: started after it stopped, stopped while starting, or its shutdown timed out (the reason its reconciles' signals abort with).
 *
 * @example The one-line message
 * ```ts
 * import { ControllerError } from "./controller_error.ts";
 * const err = new ControllerError("Cannot do it");
 * if (err.name !== "ControllerError" || err.message !== "Cannot do it") throw new Error(err.name);
 * ```
 */
export class ControllerError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message What failed, one line.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ControllerError";
  }
}
