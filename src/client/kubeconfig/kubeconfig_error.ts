/**
 * The one error of the kubeconfig layer: a kubeconfig that cannot be found, read or
 * understood, or credentials that cannot be obtained.
 *
 * @module
 */
import { KubenoError } from "../../util/error.ts";

/**
 * A kubeconfig could not be found, read or understood, or its credentials could not be
 * obtained. The message is one line naming the file and the problem.
 *
 * @example The message names the file
 * ```ts
 * import { KubeconfigError } from "./kubeconfig_error.ts";
 * const err = new KubeconfigError("/tmp/kc.yaml", "context \"dev\" does not exist");
 * if (err.message !== 'Cannot load kubeconfig "/tmp/kc.yaml": context "dev" does not exist') {
 *   throw new Error(err.message);
 * }
 * ```
 */
export class KubeconfigError extends KubenoError {
  /** The kubeconfig's path, or `in-cluster`. */
  readonly path: string;

  /**
   * Creates the error; the message is `Cannot load kubeconfig "<path>": <problem>`.
   *
   * @param path The kubeconfig's path, or `in-cluster`.
   * @param problem What is wrong, one line.
   * @param options The standard `cause`.
   */
  constructor(path: string, problem: string, options?: ErrorOptions) {
    super(`Cannot load kubeconfig "${path}": ${problem}`, options);
    this.name = "KubeconfigError";
    this.path = path;
  }
}

/**
 * Credentials could not be obtained: a token or certificate file cannot be read, an exec
 * plugin failed or printed no usable ExecCredential, or the user's fields contradict each
 * other. It reaches callers as the `cause` of a {@linkcode KubeconfigError}, whose message
 * quotes it after `cannot obtain credentials of user "<name>"`.
 *
 * @example The message is the problem, one line
 * ```ts
 * import { CredentialsError } from "./kubeconfig_error.ts";
 * const err = new CredentialsError("client-key is set but client-certificate is not");
 * if (err.name !== "CredentialsError") throw new Error(err.name);
 * ```
 */
export class CredentialsError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message What is wrong, one line.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "CredentialsError";
  }
}
