/**
 * Comparing resourceVersions, as the API server defines them since KEP-5504 (stable in
 * Kubernetes 1.35): decimal integers without leading zeros, larger is newer.
 *
 * @module
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
 * import { compareResourceVersions } from "./resource_version.ts";
 * if (!(compareResourceVersions("9", "10") < 0)) throw new Error("9 is older than 10");
 * ```
 */
export function compareResourceVersions(a: string, b: string): number {
  if (a === b) return 0;
  if (!COMPARABLE.test(a) || !COMPARABLE.test(b)) return NaN;
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : 1;
}
