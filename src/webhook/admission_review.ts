/**
 * The wire types of Kubernetes admission (`admission.k8s.io/v1` AdmissionReview) and
 * checking an untrusted review body: what the API server sends a webhook, and what the
 * webhook answers.
 *
 * @module
 */

/** What a request does to the object. */
export type AdmissionOperation = "CREATE" | "UPDATE" | "DELETE" | "CONNECT";

/** The user a request is made by, as the API server authenticated it. */
export interface UserInfo {
  /** User name, e.g. `system:admin` or `system:serviceaccount:ns:name`. */
  username?: string;
  /** Unique id of the user. */
  uid?: string;
  /** Groups the user belongs to. */
  groups?: string[];
  /** Extra attributes from the authenticator. */
  extra?: Record<string, string[]>;
}

/** A group/version/kind as admission requests name it. */
export interface GroupVersionKind {
  /** API group; `""` for the core group. */
  group: string;
  /** Version, e.g. `v1`. */
  version: string;
  /** Kind, e.g. `ConfigMap`. */
  kind: string;
}

/** The `request` of an AdmissionReview. */
export interface AdmissionRequest {
  /** Identifies this call; the response must echo it. */
  uid: string;
  /** Kind of the object as the webhook registered for it. */
  kind: GroupVersionKind;
  /** Resource being acted on. */
  resource: { group: string; version: string; resource: string };
  /** Subresource, e.g. `status`, if any. */
  subResource?: string;
  /** Kind of the original request, before conversion to the registered version. */
  requestKind?: GroupVersionKind;
  /** Name of the object; may be empty on CREATE with `generateName`. */
  name?: string;
  /** Namespace of the object. */
  namespace?: string;
  /** The operation. */
  operation: AdmissionOperation;
  /** Who made the request. */
  userInfo: UserInfo;
  /** The new object (CREATE, UPDATE). */
  object?: unknown;
  /** The existing object (UPDATE, DELETE). */
  oldObject?: unknown;
  /** True when the request is a dry run: nothing will be persisted. */
  dryRun?: boolean;
  /** The operation's options, e.g. `CreateOptions`. */
  options?: unknown;
}

/** The `response` of an AdmissionReview. */
export interface AdmissionResponse {
  /** The request's uid. */
  uid: string;
  /** Whether the request may proceed. */
  allowed: boolean;
  /** Why it was refused: shown to the client. */
  status?: {
    code?: number;
    message?: string;
    reason?: string;
    /** The object and, for reason `Invalid`, one cause per refused field. */
    details?: {
      group?: string;
      kind?: string;
      name?: string;
      causes?: { reason?: string; field?: string; message?: string }[];
    };
  };
  /** Base64 of a JSON patch (RFC 6902) to apply, mutating webhooks only. */
  patch?: string;
  /** `JSONPatch` when `patch` is set. */
  patchType?: "JSONPatch";
  /** Warnings returned to the client as `Warning` headers. */
  warnings?: string[];
}

/** An `admission.k8s.io/v1` AdmissionReview. */
export interface AdmissionReview {
  /** Always `admission.k8s.io/v1`. */
  apiVersion: "admission.k8s.io/v1";
  /** Always `AdmissionReview`. */
  kind: "AdmissionReview";
  /** Set in what the API server sends. */
  request?: AdmissionRequest;
  /** Set in what the webhook answers. */
  response?: AdmissionResponse;
}

/** The outcome of {@linkcode parseAdmissionReview}. */
export type ParsedReview =
  | { ok: true; request: AdmissionRequest }
  | { ok: false; uid?: string; message: string };

const OPERATIONS = new Set(["CREATE", "UPDATE", "DELETE", "CONNECT"]);

/**
 * Checks an untrusted AdmissionReview body. It never throws: a malformed body yields a
 * message naming what was wrong, and the request's uid when one could be read, so that the
 * caller can still answer with a well-formed review.
 *
 * @param body The parsed JSON body.
 * @returns The request, or what was wrong with the body.
 *
 * @example Checking a body
 * ```ts
 * import { parseAdmissionReview } from "./admission_review.ts";
 * const bad = parseAdmissionReview({ apiVersion: "admission.k8s.io/v1beta1" });
 * if (bad.ok || !bad.message.includes("v1beta1")) throw new Error();
 * ```
 */
export function parseAdmissionReview(body: unknown): ParsedReview {
  if (!isRecord(body)) return { ok: false, message: "AdmissionReview must be a JSON object" };
  const req = body.request;
  const uid = isRecord(req) && typeof req.uid === "string" && req.uid ? req.uid : undefined;
  const fail = (message: string): ParsedReview => ({ ok: false, uid, message });
  if (body.apiVersion !== "admission.k8s.io/v1") {
    return fail(
      `Unsupported AdmissionReview apiVersion ${
        quote(body.apiVersion)
      }: expected "admission.k8s.io/v1"`,
    );
  }
  if (body.kind !== "AdmissionReview") {
    return fail(`Unexpected kind ${quote(body.kind)}: expected "AdmissionReview"`);
  }
  if (!isRecord(req)) return fail("AdmissionReview has no request");
  if (uid === undefined) return fail("AdmissionReview request has no uid");
  if (!isGvk(req.kind)) return fail("AdmissionReview request.kind must have group, version, kind");
  if (typeof req.operation !== "string" || !OPERATIONS.has(req.operation)) {
    return fail(`Unknown operation ${quote(req.operation)}`);
  }
  for (const field of ["object", "oldObject"] as const) {
    const v = req[field];
    if (v !== undefined && v !== null && !isKubeObject(v)) {
      return fail(`AdmissionReview request.${field} must be an object with metadata`);
    }
  }
  if ((req.operation === "CREATE" || req.operation === "UPDATE") && !isKubeObject(req.object)) {
    return fail(`AdmissionReview request.object is missing for ${req.operation}`);
  }
  if ((req.operation === "UPDATE" || req.operation === "DELETE") && !isKubeObject(req.oldObject)) {
    return fail(`AdmissionReview request.oldObject is missing for ${req.operation}`);
  }
  for (const f of ["name", "namespace", "subResource"] as const) {
    if (req[f] !== undefined && typeof req[f] !== "string") {
      return fail(`AdmissionReview request.${f} must be a string`);
    }
  }
  if (req.dryRun !== undefined && typeof req.dryRun !== "boolean") {
    return fail("AdmissionReview request.dryRun must be a boolean");
  }
  const userInfo = isRecord(req.userInfo) ? req.userInfo as UserInfo : {};
  const resource = isRecord(req.resource)
    ? req.resource as AdmissionRequest["resource"]
    : { group: req.kind.group, version: req.kind.version, resource: "" };
  return {
    ok: true,
    request: { ...req, uid, userInfo, resource } as unknown as AdmissionRequest,
  };
}

/**
 * Wraps a response in an AdmissionReview.
 *
 * @param response The response.
 * @returns The review to send back.
 *
 * @example Allowing a request
 * ```ts
 * import { reviewOf } from "./admission_review.ts";
 * const review = reviewOf({ uid: "1", allowed: true });
 * if (review.kind !== "AdmissionReview" || !review.response?.allowed) throw new Error();
 * ```
 */
export function reviewOf(response: AdmissionResponse): AdmissionReview {
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isGvk(v: unknown): v is GroupVersionKind {
  return isRecord(v) && typeof v.group === "string" && typeof v.version === "string" &&
    typeof v.kind === "string" && v.kind !== "";
}

function isKubeObject(v: unknown): boolean {
  return isRecord(v) && isRecord(v.metadata);
}

function quote(v: unknown): string {
  const s = typeof v === "string" ? v : JSON.stringify(v) ?? String(v);
  return `"${s.length > 60 ? `${s.slice(0, 60)}…` : s}"`;
}
