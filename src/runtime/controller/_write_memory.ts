// What a controller last wrote, so that it does not write it again when its own writes come
// back as watch events (the "echo" reconciles of controller-runtime and kubeno alike).
//
// - Owned objects: the hash of the last applied desired object per owned object. A later
//   apply is skipped when the desired object hashes the same (nothing was added, changed or
//   dropped since) and the cached object still holds every field of it (nobody changed or
//   removed them since). Anything else — a new desired state, a change by someone else, a
//   deletion (its event forgets the entry), an object the cache does not hold — is applied.
// - Status: the hash of the last status patch per primary and the resourceVersion its write
//   returned. While the cached primary is older than that write (comparable resourceVersions,
//   KEP-5504, GA in Kubernetes 1.35), the same patch again is skipped; once the cache has
//   caught up, the cache decides alone (the context's subset check).
//
// Memory: one number per owned object and one small entry per primary.
import { kindKey } from "../../core/kind_key.ts";
import type { KubeObject } from "../../core/object.ts";
import { objectKey, type ObjectName } from "../../core/object_key.ts";
import type { Resource } from "../../core/resource.ts";

/**
 * An owned object's identity in the write memory: its kind (full or metadata-only) and its
 * object key.
 */
export function appliedKey(res: Resource<any>, obj: KubeObject | ObjectName): string {
  return `${kindKey(res)}\u0000${objectKey(obj)}`;
}

/** Remembers a controller's own writes. */
export class WriteMemory {
  readonly #applied = new Map<string, number>();
  readonly #status = new Map<string, { hash: number; rv: string }>();

  /**
   * Whether applying `desired` again would change nothing.
   *
   * @param key The owned object's identity (kind and object key).
   * @param desired The object about to be applied.
   * @param cached The owned object as the controller's cache holds it, if it does.
   * @returns True when the apply can be skipped.
   */
  applyUnchanged(key: string, desired: object, cached: object | undefined): boolean {
    const last = this.#applied.get(key);
    if (last === undefined || cached === undefined || last !== hashOf(desired)) return false;
    const { apiVersion: _a, kind: _k, ...fields } = desired as Record<string, unknown>;
    return contains(cached, fields);
  }

  /** Records a successful apply of `desired`. */
  recordApply(key: string, desired: object): void {
    this.#applied.set(key, hashOf(desired));
  }

  /** Forgets an owned object (it was deleted). */
  forgetApplied(key: string): void {
    this.#applied.delete(key);
  }

  /**
   * Whether `patch` is the status this controller last wrote for the primary and the cache
   * has not caught up with that write yet.
   *
   * @param key The primary's key.
   * @param patch The status merge patch about to be sent.
   * @param cachedRv The cached primary's resourceVersion.
   * @returns True when the patch can be skipped.
   */
  statusPending(key: string, patch: unknown, cachedRv: string | undefined): boolean {
    const last = this.#status.get(key);
    if (!last || cachedRv === undefined || last.hash !== hashOf(patch)) return false;
    return compareResourceVersions(cachedRv, last.rv) < 0;
  }

  /** Records a successful status write and the resourceVersion it returned. */
  recordStatus(key: string, patch: unknown, rv: string | undefined): void {
    if (rv === undefined) this.#status.delete(key);
    else this.#status.set(key, { hash: hashOf(patch), rv });
  }

  /** Forgets a primary (it was deleted). */
  forgetStatus(key: string): void {
    this.#status.delete(key);
  }

  /** Entries held, for tests. */
  get size(): number {
    return this.#applied.size + this.#status.size;
  }
}

/**
 * Compares two resourceVersions as the API server defines them since KEP-5504: decimal
 * integers without leading zeros. Anything else is not comparable: then the result is 0 when
 * equal and NaN otherwise, so callers fall back to treating the cache as current.
 */
export function compareResourceVersions(a: string, b: string): number {
  if (a === b) return 0;
  const valid = (s: string) => /^[1-9][0-9]*$/.test(s);
  if (!valid(a) || !valid(b)) return NaN;
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : 1;
}

/**
 * Whether `cached` holds every field of `desired` with the same value: maps may hold more
 * keys (server defaults, other managers' fields), lists must have the same length and each
 * element must hold its counterpart (defaults inside list elements).
 */
export function contains(cached: unknown, desired: unknown): boolean {
  if (desired === null || typeof desired !== "object") return Object.is(cached, desired);
  if (cached === null || typeof cached !== "object") return false;
  if (Array.isArray(desired)) {
    return Array.isArray(cached) && cached.length === desired.length &&
      desired.every((d, i) => contains(cached[i], d));
  }
  if (Array.isArray(cached)) return false;
  const c = cached as Record<string, unknown>;
  for (const [k, v] of Object.entries(desired)) {
    if (v === undefined) continue;
    if (!contains(c[k], v)) return false;
  }
  return true;
}

/** A 53-bit hash (cyrb53) of a value's JSON. */
export function hashOf(value: unknown): number {
  const s = JSON.stringify(value) ?? "";
  let h1 = 0xdeadbeef, h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
