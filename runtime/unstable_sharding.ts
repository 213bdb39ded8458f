/**
 * Past one leader: every replica runs at once and reconciles its share of the objects. A
 * {@linkcode ShardCoordinator} cuts the 64-bit hash space of the objects' uids (or namespaces)
 * into virtual shards, hands each out through a Lease, and gives the informers of sharded
 * kinds its {@linkcode ShardFilter}: they list and watch with its `shardSelector` and check
 * every object by the same hash, so a server without the feature costs bandwidth but never
 * puts a foreign object in the cache. A shard changes hands only after the old owner's cache
 * and reconciles let go of it. The manager takes it as its `sharding` option
 * ({@linkcode ManagerSharding}).
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature of Kubernetes
 * 1.36+ (KEP-5866: `shardSelector`, `shardRange(...)`, `ListMeta.shardInfo`), off by default
 * in the API server; these names may change with it, without a major release of kubeno.
 *
 * @example Which shard an object falls in, and the selector that asks for shards
 * ```ts
 * import { shardOf, shardSelector } from "./unstable_sharding.ts";
 *
 * const pod = { metadata: { name: "web", namespace: "shop", uid: "foobar" } };
 * if (shardOf(pod, "uid", 12) !== 6) throw new Error(); // FNV-1a 0x8594… / (2^64 / 12)
 * const selector = shardSelector("uid", [6, 7], 12);
 * if (!selector?.startsWith("shardRange(object.metadata.uid, '0x8000000000000000'")) {
 *   throw new Error(selector ?? "null");
 * }
 * ```
 *
 * @module
 */
export {
  DEFAULT_SHARDS,
  ShardCoordinator,
  type ShardCoordinatorOptions,
  type ShardingEnd,
  type ShardingMetrics,
  type ShardingOptions,
} from "../src/runtime/sharding/coordinator.ts";
export { ShardingError } from "../src/runtime/sharding/sharding_error.ts";
export { type ShardKey, shardOf, shardSelector } from "../src/runtime/sharding/hash_range.ts";
export type { ShardFilter } from "../src/runtime/cache/shard_filter.ts";
export type { ManagerSharding, ShardStat } from "../src/runtime/manager/manager.ts";
