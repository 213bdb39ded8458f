/**
 * The shapes every Kubernetes object shares, as kubeno's own small types.
 *
 * @module
 */

/** One entry of `metadata.ownerReferences`. */
export interface OwnerReference {
  /** API version of the owner, e.g. `apps/v1`. */
  apiVersion: string;
  /** Kind of the owner, e.g. `Deployment`. */
  kind: string;
  /** Name of the owner. */
  name: string;
  /** UID of the owner. */
  uid: string;
  /** True when the owner is the managing controller; at most one owner may set it. */
  controller?: boolean;
  /** True when the owner cannot be deleted from storage before this object is. */
  blockOwnerDeletion?: boolean;
}

/** One entry of `metadata.managedFields`, kept opaque. */
export interface ManagedFieldsEntry {
  /** The field manager that owns these fields. */
  manager?: string;
  /** `Apply` or `Update`. */
  operation?: string;
  /** API version the fields were written in. */
  apiVersion?: string;
  /** When the entry was last changed. */
  time?: string;
  /** `FieldsV1`. */
  fieldsType?: string;
  /** The owned field set. */
  fieldsV1?: Record<string, unknown>;
  /** Subresource the entry applies to, e.g. `status`. */
  subresource?: string;
}

/** Standard object metadata (`metav1.ObjectMeta`). */
export interface ObjectMeta {
  /** Object name, unique within its namespace (or the cluster). */
  name?: string;
  /** Prefix the server uses to generate a unique name when `name` is empty. */
  generateName?: string;
  /** Namespace of a namespaced object. */
  namespace?: string;
  /** Unique id set by the server. */
  uid?: string;
  /** Opaque version for optimistic concurrency and watches. */
  resourceVersion?: string;
  /** Sequence number of spec changes, set by the server. */
  generation?: number;
  /** When the object was created, RFC 3339. */
  creationTimestamp?: string;
  /** When graceful deletion was requested, RFC 3339. */
  deletionTimestamp?: string;
  /** Seconds allowed for graceful termination. */
  deletionGracePeriodSeconds?: number;
  /** Identifying key/value pairs. */
  labels?: Record<string, string>;
  /** Non-identifying key/value pairs. */
  annotations?: Record<string, string>;
  /** Objects this object depends on. */
  ownerReferences?: OwnerReference[];
  /** Keys that must be removed before the object is deleted from storage. */
  finalizers?: string[];
  /** Field ownership for server-side apply. */
  managedFields?: ManagedFieldsEntry[];
}

/** Any Kubernetes object: `apiVersion`, `kind` and `metadata`, plus whatever else it carries. */
export interface KubeObject {
  /** Group and version, e.g. `apps/v1` or `v1`. */
  apiVersion?: string;
  /** Kind, e.g. `Deployment`. */
  kind?: string;
  /** Standard metadata. */
  metadata: ObjectMeta;
}

/** A reference to one object, enough to find it again. */
export interface ObjectRef {
  /** Group and version, e.g. `apps/v1`. */
  apiVersion: string;
  /** Kind, e.g. `Deployment`. */
  kind: string;
  /** Object name. */
  name: string;
  /** Namespace, absent for cluster-scoped objects. */
  namespace?: string;
  /** UID, when known. */
  uid?: string;
}

/** A `metav1.Condition`. */
export interface Condition {
  /** Condition type in CamelCase, e.g. `Ready`. */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: "True" | "False" | "Unknown";
  /** Generation the condition was set from. */
  observedGeneration?: number;
  /** When `status` last changed, RFC 3339. */
  lastTransitionTime: string;
  /** Machine-readable CamelCase reason. */
  reason: string;
  /** Human-readable message. */
  message: string;
}

/**
 * The fields of a Kubernetes object that kubeno's built-in kinds do not spell out: any
 * further field, of any value. A built-in kind's type is its spelled-out fields `&`
 * `OpenObject`, so every field the server sends is kept and can be read (as `unknown`) and
 * written.
 */
export type OpenObject = { [field: string]: unknown };

/*
 * resourceVersions, as the API server defines them since KEP-5504 (stable in Kubernetes 1.35):
 * decimal integers without leading zeros, larger is newer.
 */
const COMPARABLE = /^[1-9][0-9]*$/;

/**
 * Compares two resourceVersions. Anything but decimal integers without leading zeros is not
 * comparable: then the result is 0 when equal and NaN otherwise, so callers fall back to
 * treating the cache as current.
 *
 * @param a One resourceVersion.
 * @param b The other.
 * @returns A negative number when `a` is older, positive when newer, 0 when equal, NaN when
 * not comparable.
 *
 * @example
 * ```ts
 * import { compareResourceVersions } from "./object.ts";
 * if (!(compareResourceVersions("9", "10") < 0)) throw new Error("9 is older than 10");
 * ```
 */
export function compareResourceVersions(a: string, b: string): number {
  if (a === b) return 0;
  if (!COMPARABLE.test(a) || !COMPARABLE.test(b)) return NaN;
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : 1;
}
