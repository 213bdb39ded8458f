/**
 * `ShardFilter`: how an informer caches one replica's share of a kind. The informer sends
 * the filter's `selector` as the list and watch `shardSelector` (KEP-5866), so a server with
 * the `ShardedListAndWatch` feature sends only those objects, and checks every object it
 * receives with `matches` as well, so a server without the feature costs bandwidth but never
 * a foreign object in the cache. When the filter changes (its ranges moved), the informer
 * drops what no longer matches — silently: those objects were not deleted — and lists and
 * watches again with the new selector.
 *
 * The cache layer knows nothing of hashes or Leases: `runtime/sharding` implements this
 * interface over a set of owned hash ranges.
 *
 * @module
 */
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";

/**
 * A live share of a kind, followed by every informer given it (`InformerOptions.shard`).
 *
 * @example A filter that holds objects in namespaces starting with "a"
 * ```ts
 * import type { ShardFilter } from "./shard_filter.ts";
 * const filter: ShardFilter = {
 *   selector: "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
 *   matches: (obj) => (obj.metadata.namespace ?? "").startsWith("a"),
 *   subscribe: () => () => {},
 * };
 * if (!filter.matches({ metadata: { name: "x", namespace: "apps" } })) throw new Error();
 * ```
 *
 * @experimental **UNSTABLE**: rests on the alpha `ShardedListAndWatch` feature (KEP-5866).
 */
export interface ShardFilter {
  /**
   * The `shardSelector` to list and watch with, or `null` while the share is empty: the
   * informer then holds nothing and sends no request.
   */
  readonly selector: string | null;
  /**
   * Whether an object belongs to the share, by the same hash the server uses. Called for
   * every object the informer receives, before its transform.
   *
   * @param obj The object as received.
   * @returns `true` to cache it.
   */
  matches(obj: KubeObject): boolean;
  /**
   * Registers a listener called, synchronously, each time `selector` and `matches` changed.
   *
   * @param listener Called after a change.
   * @returns A function that removes the listener.
   */
  subscribe(listener: () => void): () => void;
  /**
   * Called by an informer for every object it receives (list items and watch events), with
   * whether `matches` kept it; for counting what arrives.
   *
   * @param resource The kind.
   * @param kept Whether it belongs to the share.
   */
  received?(resource: Resource<any>, kept: boolean): void;
  /**
   * Called once per informer and reason when the server may not have applied the selector:
   * `"no-shard-info"` when a list came back without `shardInfo` (servers without the
   * `ShardedListAndWatch` feature; also custom resources on Kubernetes 1.37, whose lists the
   * server filters without saying so), `"foreign-object"` when an object outside the share
   * arrived (proof that the server did not filter: every replica receives every object). The
   * informer checks every object on the client either way.
   *
   * @param resource The kind.
   * @param reason What was seen.
   */
  unfiltered?(resource: Resource<any>, reason: "no-shard-info" | "foreign-object"): void;
}
