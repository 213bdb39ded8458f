/**
 * The API client: kubeconfig and in-cluster credentials, typed CRUD, server-side apply, the
 * status subresource, raw watches, and {@linkcode ApiError} carrying the server's code,
 * reason and field causes.
 *
 * @example Errors keep what the server said
 * ```ts
 * import { ApiError, isNotFound } from "./client.ts";
 *
 * const err = ApiError.fromStatus(
 *   { verb: "get", kind: "ConfigMap", apiVersion: "v1", plural: "configmaps", name: "app" },
 *   404,
 *   {
 *     kind: "Status", apiVersion: "v1", status: "Failure", code: 404, reason: "NotFound",
 *     message: 'configmaps "app" not found', details: { name: "app", kind: "configmaps" },
 *   },
 * );
 * if (!isNotFound(err) || err.reason !== "NotFound") throw new Error();
 * ```
 *
 * @module
 */
export {
  Client,
  type ClientOptions,
  createClient,
  type RequestMetric,
} from "./src/client/client.ts";
export type {
  ApplyObject,
  ApplyOptions,
  DeleteOptions,
  JsonPatchOperation,
  ListOptions,
  ListPage,
  MergePatch,
  ObjectList,
  ObjectOptions,
  PatchOptions,
  RawWatchEvent,
  RawWatchOptions,
  ShardInfo,
  WriteOptions,
} from "./src/client/types.ts";
export {
  ApiError,
  type ApiErrorTarget,
  ConnectionError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isTooManyRequests,
  isUnauthorized,
  type Status,
  type StatusCause,
  type StatusDetails,
} from "./src/client/errors/api_error.ts";
export {
  type ClusterAccess,
  type Credentials,
  type KubeconfigOptions,
  loadKubeconfig,
} from "./src/client/kubeconfig/kubeconfig.ts";
export { CredentialsError, KubeconfigError } from "./src/client/kubeconfig/kubeconfig_error.ts";
export { TransportError } from "./src/client/transport/transport_error.ts";
export { KubenoError } from "./src/util/error.ts";
export {
  EXEC_PROTOCOLS,
  type ExecOptions,
  type ExecResult,
  type LogOptions,
  type PodStream,
  type PortForward,
  type PortForwardOptions,
} from "./src/client/pod_streams.ts";
export { fromYaml, toYaml } from "./src/util/yaml.ts";
