/**
 * REST paths and query strings for the Kubernetes API.
 *
 * @module
 */
import type { Resource } from "../core/resource.ts";

/** Where a request goes within a resource. */
export interface PathParts {
  /** Namespace; ignored for cluster-scoped resources, all namespaces when absent. */
  namespace?: string;
  /** Object name; the collection when absent. */
  name?: string;
  /** Subresource such as `status`. */
  subresource?: string;
}

/**
 * The REST path of a resource's collection or object: `/api/v1/namespaces/ns/pods/x` for
 * the core group, `/apis/apps/v1/deployments` for others.
 *
 * @param res The resource.
 * @param parts Namespace, name and subresource.
 * @returns The path, with every segment percent-encoded.
 * @throws {TypeError} When a subresource is given without a name.
 */
export function resourcePath(res: Resource, parts: PathParts = {}): string {
  const seg = segmentsOf(res);
  let path = seg.base;
  if (res.namespaced && parts.namespace) {
    path += `/namespaces/${encodeURIComponent(parts.namespace)}`;
  }
  path += seg.plural;
  if (parts.name !== undefined) {
    if (parts.name === "") throw new TypeError(`Cannot address ${res.kind}: name is empty`);
    path += `/${encodeURIComponent(parts.name)}`;
  }
  if (parts.subresource) {
    if (parts.name === undefined) {
      throw new TypeError(`Cannot address ${res.kind} ${parts.subresource}: name is missing`);
    }
    path += `/${encodeURIComponent(parts.subresource)}`;
  }
  return path;
}

// A resource's encoded group/version and plural, built once per resource object (its
// group, version and plural do not change) rather than encoded again for every request.
const segments = new WeakMap<Resource, { base: string; plural: string }>();
function segmentsOf(res: Resource): { base: string; plural: string } {
  let seg = segments.get(res);
  if (!seg) {
    seg = {
      base: res.group === ""
        ? `/api/${encodeURIComponent(res.version)}`
        : `/apis/${encodeURIComponent(res.group)}/${encodeURIComponent(res.version)}`,
      plural: `/${encodeURIComponent(res.plural)}`,
    };
    segments.set(res, seg);
  }
  return seg;
}

/**
 * A query string from the defined, non-empty values of `params`, in insertion order.
 *
 * @param params Values; `undefined`, `""` and `false` are left out, `true` becomes `true`.
 * @returns `?a=1&b=2`, or `""` when nothing is set.
 */
export function queryString(
  params: Record<string, string | number | boolean | undefined>,
): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === "" || v === false) continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}
