// Objects in an informer's store are frozen, deeply, once when they arrive: every reader then
// shares them at no cost, and none can change what the others (or the cache) see. The
// alternative, a copy per read (controller-runtime's DeepCopy), costs more the more reads
// there are; bench/cache_immutability_bench.ts measures both.

/**
 * Freezes `value` and everything reachable from it, in place. Children are frozen before
 * their parent: measured 2–4x faster in V8 than freezing the parent first.
 *
 * @returns `value`, frozen.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  if (Array.isArray(value)) {
    for (const v of value) deepFreeze(v);
  } else {
    for (const k in value) deepFreeze((value as Record<string, unknown>)[k]);
  }
  return Object.freeze(value);
}

/**
 * A deeply frozen copy of JSON data (what an API answer parses into), made and frozen in one
 * pass: about 4× cheaper than `deepFreeze(structuredClone(value))` for a 1 KiB object, which
 * the own-write tracker paid per owned write (4.4% of a converge's CPU).
 *
 * @param value Plain JSON data: objects, arrays, strings, numbers, booleans, null.
 * @returns A frozen copy; `value` itself is left as it is.
 */
export function frozenCopy<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = frozenCopy(value[i]);
    return Object.freeze(out) as T;
  }
  const out: Record<string, unknown> = {};
  for (const k in value) {
    const v = frozenCopy((value as Record<string, unknown>)[k]);
    // JSON.parse makes "__proto__" an own key; an assignment would set the prototype.
    if (k === "__proto__") {
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    } else out[k] = v;
  }
  return Object.freeze(out) as T;
}
