/**
 * The hash space Kubernetes shards list and watch over (KEP-5866): the 64-bit FNV-1a hash of
 * an object's `metadata.uid` or `metadata.namespace`, cut into a fixed number of virtual
 * shards, each a half-open range `[start, end)`, and the `shardSelector` that asks the API
 * server for some of them. The same hash on the client decides what a replica keeps when the
 * server does not filter.
 *
 * Checked against k8s.io/apimachinery v0.37.2 `pkg/sharding` (`HashField`: `hash/fnv`'s
 * `New64a` over the field's bytes; `HexLess`; the selector's `String()` format) and
 * k8s.io/apiserver v0.37.2 `pkg/sharding` (the parser: `object.metadata.uid` or
 * `object.metadata.namespace`, 16-digit lower-case hex bounds with a `0x` prefix, and
 * `0x10000000000000000` for 2^64).
 *
 * @module
 */
import type { KubeObject } from "../../core/object.ts";

/**
 * Which field an object is sharded by.
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export type ShardKey = "uid" | "namespace";

/** One virtual shard: hashes `start <= h < end`, with `end` at most 2^64. */
export interface HashRange {
  /** Inclusive lower bound. */
  readonly start: bigint;
  /** Exclusive upper bound. */
  readonly end: bigint;
}

/** The size of the hash space, 2^64. */
export const HASH_SPACE = 1n << 64n;

const encoder = new TextEncoder();

/**
 * The 64-bit FNV-1a hash of a string's UTF-8 bytes, as Go's `hash/fnv.New64a` computes it
 * and the API server shards by.
 *
 * @param value The field's value, e.g. an object's uid.
 * @returns The hash, `0 <= h < 2^64`.
 *
 * @example The empty string hashes to the offset basis
 * ```ts
 * import { fnv1a64 } from "./hash_range.ts";
 * if (fnv1a64("") !== 0xcbf29ce484222325n) throw new Error();
 * if (fnv1a64("a") !== 0xaf63dc4c8601ec8cn) throw new Error();
 * ```
 */
export function fnv1a64(value: string): bigint {
  // Two 32-bit halves in doubles (products stay below 2^53): the FNV prime is
  // 2^40 + 0x1b3, so h * prime = h * 0x1b3 + (h << 40).
  let hi = 0xcbf29ce4, lo = 0x84222325;
  for (const byte of encoder.encode(value)) {
    lo = (lo ^ byte) >>> 0;
    const low = lo * 0x1b3;
    const carry = Math.floor(low / 0x100000000);
    const high = hi * 0x1b3 + carry + ((lo * 256) % 0x100000000);
    lo = low % 0x100000000;
    hi = high % 0x100000000;
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/**
 * The value an object is sharded by: its uid, or its namespace (`""` when cluster-scoped).
 *
 * @param obj The object.
 * @param key The field.
 * @returns The field's value.
 */
export function shardKeyValue(obj: KubeObject, key: ShardKey): string {
  return (key === "uid" ? obj.metadata?.uid : obj.metadata?.namespace) ?? "";
}

/**
 * The virtual shards: `count` ranges of (nearly) equal size covering the hash space in
 * order, shard `i` from `ceil(2^64 * i / count)`.
 *
 * @param count How many; at least 1.
 * @returns The ranges, shard 0 first.
 * @throws {RangeError} When `count` is not an integer between 1 and 4096.
 *
 * @example Two shards split the space in half
 * ```ts
 * import { shardRanges } from "./hash_range.ts";
 * const [a, b] = shardRanges(2);
 * if (a.end !== 0x8000000000000000n || b.start !== a.end || b.end !== 1n << 64n) throw new Error();
 * ```
 */
export function shardRanges(count: number): HashRange[] {
  if (!Number.isInteger(count) || count < 1 || count > 4096) {
    throw new RangeError(`Cannot cut the hash space into "${count}" shards: use 1 to 4096`);
  }
  const n = BigInt(count);
  const bound = (i: bigint) => (HASH_SPACE * i + n - 1n) / n;
  return Array.from({ length: count }, (_, i) => ({
    start: bound(BigInt(i)),
    end: bound(BigInt(i + 1)),
  }));
}

/**
 * Which of `count` virtual shards a hash falls in.
 *
 * @param hash A 64-bit hash.
 * @param count The number of shards.
 * @returns The shard index, `0 <= i < count`.
 */
export function shardIndex(hash: bigint, count: number): number {
  return Number((hash * BigInt(count)) >> 64n);
}

/**
 * The shard of an object.
 *
 * @param obj The object.
 * @param key The field it is sharded by.
 * @param count The number of shards.
 * @returns The shard index.
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export function shardOf(obj: KubeObject, key: ShardKey, count: number): number {
  return shardIndex(fnv1a64(shardKeyValue(obj, key)), count);
}

/**
 * A bound as the API server's parser takes it: `0x` and 16 lower-case hex digits, or
 * `0x10000000000000000` for 2^64.
 *
 * @param n The bound.
 * @returns Its literal.
 */
export function hexBound(n: bigint): string {
  return `0x${n.toString(16).padStart(16, "0")}`;
}

/**
 * The `shardSelector` asking for the given shards: adjacent ones merged into one
 * `shardRange(...)`, several joined with `||`, in the format the server echoes back in
 * `ListMeta.shardInfo`.
 *
 * @param key The field sharded by.
 * @param shards Indexes of owned shards.
 * @param count The number of shards.
 * @returns The selector, or `null` when `shards` is empty (nothing to ask for).
 *
 * @example Shards 0 and 1 of 4, by uid
 * ```ts
 * import { shardSelector } from "./hash_range.ts";
 * const s = shardSelector("uid", [1, 0], 4);
 * if (s !== "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')") {
 *   throw new Error(s ?? "null");
 * }
 * ```
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export function shardSelector(
  key: ShardKey,
  shards: Iterable<number>,
  count: number,
): string | null {
  const ranges = shardRanges(count);
  const owned = [...new Set(shards)].sort((a, b) => a - b);
  if (!owned.length) return null;
  const parts: string[] = [];
  let first = owned[0], last = owned[0];
  const flush = () =>
    parts.push(
      `shardRange(object.metadata.${key}, '${hexBound(ranges[first].start)}', '${
        hexBound(ranges[last].end)
      }')`,
    );
  for (const i of owned.slice(1)) {
    if (i === last + 1) {
      last = i;
      continue;
    }
    flush();
    first = last = i;
  }
  flush();
  return parts.join(" || ");
}

/**
 * A shard's range as a label value, e.g. `0000000000000000-1555555555555556`.
 *
 * @param range The range.
 * @returns 16 hex digits, a dash and the end (17 digits for 2^64).
 */
export function rangeLabel(range: HashRange): string {
  return `${hexBound(range.start).slice(2)}-${hexBound(range.end).slice(2)}`;
}
