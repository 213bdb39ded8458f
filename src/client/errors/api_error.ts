/**
 * The errors kubeno's client throws: {@link ApiError} when the API server answered with a
 * failure, {@link ConnectionError} when it could not be reached at all, plus `isNotFound`-style
 * helpers that read well in `catch` blocks.
 *
 * @module
 */
import { groupOf, parseApiVersion } from "../../core/api_version.ts";
import { KubenoError } from "../../util/error.ts";

/** One field-level cause of a failure (`metav1.StatusCause`). */
export interface StatusCause {
  /** Machine-readable reason, e.g. `FieldValueRequired` or `FieldManagerConflict`. */
  reason?: string;
  /** Human-readable description. */
  message?: string;
  /** The field at fault, e.g. `spec.replicas` or `.data.key`. */
  field?: string;
}

/** The `details` of a `metav1.Status`. */
export interface StatusDetails {
  /** Name of the object concerned. */
  name?: string;
  /** API group of the object concerned. */
  group?: string;
  /** Kind, or for most errors the resource plural, of the object concerned. */
  kind?: string;
  /** UID of the object concerned. */
  uid?: string;
  /** Field causes. */
  causes?: StatusCause[];
  /** Seconds to wait before retrying, when the server suggests it. */
  retryAfterSeconds?: number;
}

/** A `metav1.Status`: what the API server returns for failures and some deletions. */
export interface Status {
  /** Always `v1`. */
  apiVersion?: string;
  /** Always `Status`. */
  kind?: string;
  /** List metadata, e.g. a `resourceVersion`. */
  metadata?: { resourceVersion?: string; continue?: string };
  /** `Success` or `Failure`. */
  status?: "Success" | "Failure" | string;
  /** Human-readable description from the server. */
  message?: string;
  /** Machine-readable CamelCase reason, e.g. `NotFound`. */
  reason?: string;
  /** Extra data about the reason. */
  details?: StatusDetails;
  /** HTTP status code. */
  code?: number;
}

/** What an {@link ApiError} was about: the verb and the object or collection addressed. */
export interface ApiErrorTarget {
  /** The request's verb: `get`, `list`, `watch`, `create`, `replace`, `patch`, `apply`, `delete`. */
  verb: string;
  /** Kind of the resource addressed, e.g. `ConfigMap`. */
  kind: string;
  /** `group/version` of the resource addressed. */
  apiVersion: string;
  /** REST plural of the resource addressed, e.g. `configmaps`. */
  plural: string;
  /** Object name, absent for collections. */
  name?: string;
  /** Namespace, absent for cluster-scoped requests and lists across all namespaces. */
  namespace?: string;
  /** Subresource, e.g. `status`. */
  subresource?: string;
}

/**
 * The API server answered with a non-2xx status. Carries the HTTP `code`, the server's
 * `reason` and `serverMessage`, the field `causes` and what was addressed (`target`).
 *
 * A 404 for a resource the server does not serve at all (a CRD that is not installed, a wrong
 * group or version) sets `resourceUnknown`, and `isNotFound` is then false: "the object does
 * not exist" and "the kind does not exist" call for different handling.
 *
 * @example Telling a missing object apart
 * ```ts
 * import { ApiError, isNotFound } from "./api_error.ts";
 * const err = ApiError.fromStatus(
 *   { verb: "get", kind: "ConfigMap", apiVersion: "v1", plural: "configmaps", name: "foo", namespace: "default" },
 *   404,
 *   { kind: "Status", status: "Failure", reason: "NotFound", code: 404,
 *     message: 'configmaps "foo" not found', details: { name: "foo", kind: "configmaps" } },
 * );
 * if (!isNotFound(err)) throw new Error("expected NotFound");
 * if (err.message !== 'Cannot get ConfigMap "default/foo": NotFound: configmaps "foo" not found') {
 *   throw new Error(err.message);
 * }
 * ```
 */
export class ApiError extends KubenoError {
  /** HTTP status code, e.g. 404. */
  readonly code: number;
  /** The server's reason, e.g. `NotFound`; `Unknown` when the body carried none. */
  readonly reason: string;
  /** The server's own message, without kubeno's prefix. */
  readonly serverMessage: string;
  /** Field causes reported by the server. */
  readonly causes: StatusCause[];
  /** What the failed request addressed. */
  readonly target: ApiErrorTarget;
  /** Seconds the server asks to wait before retrying, from the body or `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;
  /** True when the server does not serve the resource at all (404 for the whole path). */
  readonly resourceUnknown: boolean;
  /** The server's `Status`, when the body was one. */
  readonly status: Status | undefined;

  /**
   * Builds an error from the pieces of a failed response; prefer {@link ApiError.fromStatus}.
   *
   * @param target What the request addressed.
   * @param init The response's code, reason, message and details.
   * @param options The standard `cause`.
   */
  constructor(
    target: ApiErrorTarget,
    init: {
      code: number;
      reason: string;
      serverMessage: string;
      causes?: StatusCause[];
      retryAfterSeconds?: number;
      resourceUnknown?: boolean;
      status?: Status;
    },
    options?: ErrorOptions,
  ) {
    const what = describeTarget(target);
    const tail = init.resourceUnknown
      ? `the server does not know resource "${resourceName(target)}"` +
        (groupOf(target.apiVersion) && !isBuiltinGroup(target.apiVersion)
          ? " (is its CustomResourceDefinition installed?)"
          : "")
      : `${init.reason}: ${init.serverMessage}`;
    super(`Cannot ${target.verb} ${what}: ${tail}`, options);
    this.name = "ApiError";
    this.code = init.code;
    this.reason = init.reason;
    this.serverMessage = init.serverMessage;
    this.causes = init.causes ?? [];
    this.target = target;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.resourceUnknown = init.resourceUnknown ?? false;
    this.status = init.status;
  }

  /**
   * Builds the error for a failed response from its status code and body.
   *
   * @param target What the request addressed.
   * @param code The HTTP status code.
   * @param body The parsed `Status`, or the raw body text when it was not one.
   * @param retryAfter The `Retry-After` header, if any.
   * @returns The error to throw.
   *
   * @example From a non-Status body
   * ```ts
   * import { ApiError } from "./api_error.ts";
   * const err = ApiError.fromStatus(
   *   { verb: "list", kind: "Widget", apiVersion: "example.com/v1", plural: "widgets" },
   *   404,
   *   "404 page not found\n",
   * );
   * if (!err.resourceUnknown) throw new Error("expected an unknown resource");
   * ```
   */
  static fromStatus(
    target: ApiErrorTarget,
    code: number,
    body: Status | string | undefined,
    retryAfter?: string | null,
  ): ApiError {
    const status = typeof body === "object" && body !== null ? body : undefined;
    const text = typeof body === "string" ? oneLine(body) : "";
    const reason = status?.reason || reasonForCode(code);
    const serverMessage = oneLine(status?.message ?? "") || text || `HTTP ${code}`;
    const headerRetry = retryAfter ? Number(retryAfter) : NaN;
    return new ApiError(target, {
      code,
      reason,
      serverMessage,
      causes: status?.details?.causes,
      retryAfterSeconds: status?.details?.retryAfterSeconds ??
        (Number.isFinite(headerRetry) ? headerRetry : undefined),
      // An object that is missing comes back as a Status naming it; a path the server does
      // not route at all comes back as plain text or as a Status without details.
      resourceUnknown: code === 404 && !status?.details?.name && !status?.details?.kind,
      status,
    });
  }
}

/**
 * The API server could not be reached or the exchange broke off: refused or reset
 * connections, DNS failures, TLS failures, timeouts. Always transient from kubeno's point of
 * view; retry with backoff. `cause` holds the underlying error.
 *
 * @example The one-line message
 * ```ts
 * import { ConnectionError } from "./api_error.ts";
 * const err = new ConnectionError("https://127.0.0.1:1", "get", new TypeError("Connection refused"));
 * if (!err.message.startsWith('Cannot get from Kubernetes API server "https://127.0.0.1:1"')) {
 *   throw new Error(err.message);
 * }
 * ```
 */
export class ConnectionError extends KubenoError {
  /** The server URL that could not be reached. */
  readonly server: string;
  /** The request's verb. */
  readonly verb: string;

  /**
   * Creates the error; the message names the verb, the server and the cause.
   *
   * @param server The API server URL.
   * @param verb The request's verb, e.g. `list`.
   * @param cause The underlying error.
   */
  constructor(server: string, verb: string, cause: unknown) {
    super(
      `Cannot ${verb} from Kubernetes API server "${server}": ${describeCause(cause)}`,
      { cause },
    );
    this.name = "ConnectionError";
    this.server = server;
    this.verb = verb;
  }
}

/**
 * Whether `err` is a connection that failed because the API server's certificate could not be
 * verified: not signed by the kubeconfig's certificate authority, expired, or issued for
 * another name. Waiting does not fix that, unlike an unreachable server.
 *
 * @param err Anything caught.
 * @returns True for a certificate the client refused.
 *
 * @example
 * ```ts
 * import { ConnectionError, isCertificateRejected } from "./api_error.ts";
 * const err = new ConnectionError("https://k8s:6443", "list", new Error("invalid peer certificate: UnknownIssuer"));
 * if (!isCertificateRejected(err)) throw new Error();
 * ```
 */
export function isCertificateRejected(err: unknown): err is ConnectionError {
  return err instanceof ConnectionError &&
    /invalid peer certificate|certificate (?:verify failed|has expired|is not valid)|UnknownIssuer|CertExpired|NotValidForName|unable to verify the first certificate/i
      .test(err.message);
}

function hasReason(err: unknown, reason: string, code: number): boolean {
  return err instanceof ApiError && !err.resourceUnknown &&
    (err.reason === reason || (err.reason === "Unknown" && err.code === code));
}

/**
 * Whether `err` says the object does not exist (404 `NotFound`). False for a resource the
 * server does not know at all; see `ApiError.resourceUnknown`.
 *
 * @param err Anything caught.
 * @returns True for a missing object.
 *
 * @example Ignore a missing object
 * ```ts
 * import { isNotFound } from "./api_error.ts";
 * if (isNotFound(new Error("x"))) throw new Error("plain errors are not NotFound");
 * ```
 */
export function isNotFound(err: unknown): err is ApiError & { reason: "NotFound" } {
  return hasReason(err, "NotFound", 404);
}

/**
 * Whether `err` is a 409 `Conflict`: a stale `resourceVersion` or a server-side apply field
 * conflict.
 *
 * @param err Anything caught.
 * @returns True for a conflict.
 *
 * @example Retry on conflict
 * ```ts
 * import { isConflict } from "./api_error.ts";
 * if (isConflict(undefined)) throw new Error();
 * ```
 */
export function isConflict(err: unknown): err is ApiError & { reason: "Conflict" } {
  return hasReason(err, "Conflict", 409);
}

/**
 * Whether `err` is a 409 `AlreadyExists` from a create.
 *
 * @param err Anything caught.
 * @returns True when the object already existed.
 *
 * @example Create unless present
 * ```ts
 * import { isAlreadyExists } from "./api_error.ts";
 * if (isAlreadyExists(null)) throw new Error();
 * ```
 */
export function isAlreadyExists(err: unknown): err is ApiError & { reason: "AlreadyExists" } {
  return err instanceof ApiError && err.reason === "AlreadyExists";
}

/**
 * Whether `err` is a 403 `Forbidden`: RBAC denied the request.
 *
 * @param err Anything caught.
 * @returns True when the request was forbidden.
 *
 * @example Check a permission failure
 * ```ts
 * import { isForbidden } from "./api_error.ts";
 * if (isForbidden(new Error())) throw new Error();
 * ```
 */
export function isForbidden(err: unknown): err is ApiError & { reason: "Forbidden" } {
  return hasReason(err, "Forbidden", 403);
}

/**
 * Whether `err` is a 422 `Invalid`: the object failed validation; see `causes`.
 *
 * @param err Anything caught.
 * @returns True for a validation failure.
 *
 * @example Report validation causes
 * ```ts
 * import { isInvalid } from "./api_error.ts";
 * if (isInvalid("nope")) throw new Error();
 * ```
 */
export function isInvalid(err: unknown): err is ApiError & { reason: "Invalid" } {
  return hasReason(err, "Invalid", 422);
}

/**
 * Whether `err` is a 410 `Gone`: the requested `resourceVersion` or `continue` token is too
 * old; list again.
 *
 * @param err Anything caught.
 * @returns True for an expired resource version.
 *
 * @example Relist on Gone
 * ```ts
 * import { isGone } from "./api_error.ts";
 * if (isGone({})) throw new Error();
 * ```
 */
export function isGone(err: unknown): err is ApiError & { code: 410 } {
  return err instanceof ApiError && (err.code === 410 || err.reason === "Expired" ||
    err.reason === "Gone");
}

/**
 * Whether `err` is a 401 `Unauthorized`: the credentials were missing, wrong or expired.
 *
 * @param err Anything caught.
 * @returns True for failed authentication.
 *
 * @example Check authentication
 * ```ts
 * import { isUnauthorized } from "./api_error.ts";
 * if (isUnauthorized(0)) throw new Error();
 * ```
 */
export function isUnauthorized(err: unknown): err is ApiError & { reason: "Unauthorized" } {
  return hasReason(err, "Unauthorized", 401);
}

/**
 * Whether `err` is a 429 `TooManyRequests`: back off for `retryAfterSeconds`.
 *
 * @param err Anything caught.
 * @returns True when the server throttled the request.
 *
 * @example Back off when throttled
 * ```ts
 * import { isTooManyRequests } from "./api_error.ts";
 * if (isTooManyRequests(new Error())) throw new Error();
 * ```
 */
export function isTooManyRequests(err: unknown): err is ApiError & { reason: "TooManyRequests" } {
  return hasReason(err, "TooManyRequests", 429);
}

const CODE_REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Gone",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

function reasonForCode(code: number): string {
  return statusReasonOf(code) ?? "Unknown";
}

/**
 * The Status `reason` the API server gives with an HTTP code (apimachinery's
 * `StatusReason`s), for the codes that have one.
 *
 * @param code An HTTP status code.
 * @returns The reason, e.g. `Invalid` for 422; `undefined` for a code without one.
 */
export function statusReasonOf(code: number): string | undefined {
  return CODE_REASONS[code];
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}

function describeTarget(t: ApiErrorTarget): string {
  const sub = t.subresource ? ` ${t.subresource}` : "";
  if (t.name !== undefined) {
    const id = t.namespace ? `${t.namespace}/${t.name}` : t.name;
    return `${t.kind}${sub} "${id}"`;
  }
  if (t.verb === "create" && t.namespace) return `${t.kind} in namespace "${t.namespace}"`;
  if (t.verb === "create") return t.kind;
  return t.namespace ? `${t.plural} in namespace "${t.namespace}"` : `${t.plural}${sub}`;
}

function resourceName(t: ApiErrorTarget): string {
  const { group, version } = parseApiVersion(t.apiVersion);
  return group ? `${t.plural}.${group}/${version}` : `${t.plural}/${version}`;
}

function isBuiltinGroup(apiVersion: string): boolean {
  const group = groupOf(apiVersion);
  return !group.includes(".") || group.endsWith(".k8s.io");
}

/** Flattens a fetch failure's chain of causes into one readable line. */
function describeCause(cause: unknown): string {
  const parts: string[] = [];
  let cur: unknown = cause;
  for (let depth = 0; cur !== undefined && cur !== null && depth < 5; depth++) {
    const msg = cur instanceof Error ? cur.message : String(cur);
    if (msg && !parts.some((p) => p.includes(msg))) parts.push(oneLine(msg));
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  const joined = parts.join(": ") || "unknown error";
  // Deno's fetch says "error sending request for url (https://...): client error (Connect): ..."
  // The URL is already named by kubeno's prefix, so keep only the cause.
  return joined
    .replace(/^fetch failed: /, "")
    .replace(/^error sending request for url \([^)]*\):\s*/, "")
    .replace(/^client error \(Connect\):\s*/, "");
}
