/**
 * The error type of `watch()` and `informer()`.
 *
 * @module
 */
import type { Resource } from "../../core/resource.ts";
import { KubenoError } from "../../util/error.ts";

/** What a {@linkcode WatchError} carries besides its message. */
export interface WatchErrorInit {
  /** The resource being watched. */
  resource: Resource<any>;
  /** The namespace watched; absent for a watch across all namespaces. */
  namespace?: string;
  /**
   * True when retrying cannot help until someone acts: 401 Unauthorized, 403 Forbidden,
   * 404 for a resource the server does not serve, 400 Bad Request (e.g. a bad selector).
   */
  persistent: boolean;
  /** HTTP status code, when the server answered. */
  code?: number;
  /** The server's reason, e.g. `Forbidden`, or `Stalled` when the watchdog fired. */
  reason?: string;
}

/**
 * A list or watch request of a watch stream failed. The message is one line naming the
 * resource, the namespace and the cause; `cause` holds the underlying error (usually an
 * `ApiError` or a `ConnectionError`).
 *
 * Transient failures (`persistent: false`: the server is unreachable or overloaded, the
 * connection dropped, the stream stalled) are retried with backoff. Persistent ones end
 * the stream unless the watch was asked to retry them.
 *
 * @example Reading a failure
 * ```ts
 * import { WatchError } from "./watch_error.ts";
 * import { resource } from "../../core/resource.ts";
 * const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
 * const err = new WatchError('Cannot list configmaps in namespace "x": Forbidden: no', {
 *   resource: ConfigMap,
 *   namespace: "x",
 *   persistent: true,
 *   code: 403,
 *   reason: "Forbidden",
 * });
 * if (err.name !== "WatchError" || !err.persistent) throw new Error();
 * ```
 */
export class WatchError extends KubenoError {
  /** The resource being watched. */
  readonly resource: Resource<any>;
  /** The namespace watched; absent for a watch across all namespaces. */
  readonly namespace: string | undefined;
  /** True when retrying cannot help until someone acts. */
  readonly persistent: boolean;
  /** HTTP status code, when the server answered. */
  readonly code: number | undefined;
  /** The server's reason, `Stalled` for the watchdog, `ConnectionFailed` when unreachable. */
  readonly reason: string | undefined;

  /**
   * Creates the error with the watch it ended and how it failed.
   *
   * @param message One line naming the resource and the cause.
   * @param init The resource, whether the failure is persistent, the status code and reason.
   * @param options The standard `cause`.
   */
  constructor(message: string, init: WatchErrorInit, options?: ErrorOptions) {
    super(message, options);
    this.name = "WatchError";
    this.resource = init.resource;
    this.namespace = init.namespace;
    this.persistent = init.persistent;
    this.code = init.code;
    this.reason = init.reason;
  }
}

/** The query fields that appear in messages about a watch. */
export interface QueryLike {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  shardSelector?: string;
}

/**
 * How messages name a watch's query: `ConfigMap (v1) in namespace "x" with labelSelector "a=b"`.
 *
 * @param res The resource watched.
 * @param q The query's namespace and selectors.
 * @returns The description.
 */
export function describeQuery(res: Resource<any>, q: QueryLike): string {
  let s = `${res.kind} (${res.apiVersion})`;
  if (q.namespace) s += ` in namespace "${q.namespace}"`;
  else if (res.namespaced) s += " in all namespaces";
  if (q.labelSelector) s += ` with labelSelector "${q.labelSelector}"`;
  if (q.fieldSelector) s += ` with fieldSelector "${q.fieldSelector}"`;
  if (q.shardSelector) s += " in its shards";
  return s;
}
