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
 * A deeply frozen copy of an object's data, made and frozen in one pass: about 4× cheaper
 * than `deepFreeze(structuredClone(value))` for a 1 KiB API answer.
 *
 * @param value What an API answer or a cache holds: plain objects, arrays and primitives
 * (anything else inside is copied with `structuredClone`).
 * @returns A frozen copy; `value` itself is left as it is.
 */
export function frozenCopy<T>(value: T): T {
  return copy(value, true);
}

/**
 * A deep copy of an object's data, as `structuredClone` makes it, for the plain objects,
 * arrays and primitives that API objects are made of: 2–4× cheaper than `structuredClone`,
 * whose serialisation step dominates for small objects. The copy is not frozen, even when
 * `value` is.
 *
 * @param value Plain data (anything else inside, a `Date` or a `Map`, is copied with
 * `structuredClone`).
 * @returns The copy.
 */
export function dataCopy<T>(value: T): T {
  return copy(value, false);
}

function copy<T>(value: T, freeze: boolean): T {
  if (typeof value !== "object" || value === null) return value;
  let out: unknown[] | Record<string, unknown>;
  if (Array.isArray(value)) {
    const a = new Array(value.length);
    for (let i = 0; i < value.length; i++) a[i] = copy(value[i], freeze);
    out = a;
  } else {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const c = structuredClone(value);
      return freeze ? deepFreeze(c) : c;
    }
    const o: Record<string, unknown> = {};
    for (const k in value) {
      const v = copy((value as Record<string, unknown>)[k], freeze);
      // JSON.parse makes "__proto__" an own key; an assignment would set the prototype.
      if (k === "__proto__") {
        Object.defineProperty(o, k, {
          value: v,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else o[k] = v;
    }
    out = o;
  }
  return (freeze ? Object.freeze(out) : out) as T;
}
