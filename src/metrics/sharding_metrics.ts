/**
 * The metrics of a sharded operator (see `ShardCoordinator`): which shards this replica
 * owns, hand-offs and how long their drains took, the live members it sees, whether the
 * API server ignored the shard selector (client-side filtering), and per shard and
 * controller: cached primaries, queued keys and reconciles.
 *
 * | family | type | labels |
 * | --- | --- | --- |
 * | `kubeno_shard_owned` | gauge (1 per owned shard) | `shard`, `range` |
 * | `kubeno_shard_members` | gauge | |
 * | `kubeno_shard_handoffs_total` | counter | `kind`: `acquired`, `took-over`, `released` |
 * | `kubeno_shard_drain_seconds` | histogram | |
 * | `kubeno_shard_client_side_filtering` | gauge (1 per kind) | `group`, `version`, `kind` |
 * | `kubeno_shard_objects` | gauge | `controller`, `shard` |
 * | `kubeno_shard_queue_depth` | gauge | `controller`, `shard` |
 * | `kubeno_shard_reconcile_total` | counter | `controller`, `shard`, `result` |
 * | `kubeno_shard_received_total` | counter | `result`: `kept`, `dropped` (on the client) |
 *
 * @module
 */
import type { ShardingMetrics } from "../runtime/sharding/coordinator.ts";
import { rangeLabel, shardRanges } from "../runtime/sharding/hash_range.ts";
import type { Registry } from "./registry.ts";

/** Per controller and owned shard, as `Manager.shardStats()` reports it. */
export interface ShardSample {
  /** The controller. */
  controller: string;
  /** The shard index. */
  shard: number;
  /** Cached primaries in the shard. */
  objects: number;
  /** Their keys waiting in the work queue. */
  queued: number;
}

/** What {@linkcode shardingMetrics} returns. */
export interface ShardingMetricsAdapter {
  /** The coordinator's hooks. */
  hooks: ShardingMetrics;
  /**
   * Counts one reconcile in its shard.
   *
   * @param controller The controller.
   * @param shard The primary's shard.
   * @param result How it ended (`success`, `error`, `requeue`).
   */
  reconciled(controller: string, shard: number, result: string): void;
  /**
   * Refreshes the per-shard gauges from `sample()` before each scrape.
   *
   * @param sample Reads the current per-shard state.
   */
  collect(sample: () => readonly ShardSample[]): void;
}

/**
 * Defines the sharding families in `registry` and the adapters that fill them.
 *
 * @param registry Where the families live.
 * @param count The number of virtual shards (for the `range` label).
 * @returns The hooks and adapters.
 *
 * @example Owning two shards shows two series
 * ```ts
 * import { Registry } from "./registry.ts";
 * import { shardingMetrics } from "./sharding_metrics.ts";
 * const registry = new Registry();
 * const m = shardingMetrics(registry, 4);
 * m.hooks.owned?.([0, 1]);
 * const text = await registry.metrics();
 * if (!text.includes('kubeno_shard_owned{shard="1",range="4000000000000000-8000000000000000"} 1')) {
 *   throw new Error(text);
 * }
 * ```
 */
export function shardingMetrics(registry: Registry, count: number): ShardingMetricsAdapter {
  const ranges = shardRanges(count);
  const owned = registry.gauge<"shard" | "range">({
    name: "kubeno_shard_owned",
    help: "1 for each virtual shard this replica owns (caches and reconciles)",
    labelNames: ["shard", "range"],
  });
  const members = registry.gauge({
    name: "kubeno_shard_members",
    help: "Live replicas of the sharded operator, as this replica sees them",
  });
  const handoffs = registry.counter<"kind">({
    name: "kubeno_shard_handoffs_total",
    help: "Shards this replica acquired (free), took over (from a silent replica) or released",
    labelNames: ["kind"],
  });
  const drain = registry.histogram({
    name: "kubeno_shard_drain_seconds",
    help: "How long releasing a shard waited for its in-flight reconciles",
    buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
  });
  const clientSide = registry.gauge<"group" | "version" | "kind">({
    name: "kubeno_shard_client_side_filtering",
    help:
      "1 for each kind whose API server ignored the shard selector (no ShardedListAndWatch): filtered on the client",
    labelNames: ["group", "version", "kind"],
  });
  const objects = registry.gauge<"controller" | "shard">({
    name: "kubeno_shard_objects",
    help: "Primaries of each shard in a controller's cache (shards not owned only mid hand-off)",
    labelNames: ["controller", "shard"],
  });
  const queued = registry.gauge<"controller" | "shard">({
    name: "kubeno_shard_queue_depth",
    help: "Keys of each owned shard waiting in a controller's work queue",
    labelNames: ["controller", "shard"],
  });
  const reconciles = registry.counter<"controller" | "shard" | "result">({
    name: "kubeno_shard_reconcile_total",
    help: "Reconciles per controller, shard and result",
    labelNames: ["controller", "shard", "result"],
  });
  const received = registry.counter<"result">({
    name: "kubeno_shard_received_total",
    help:
      "Objects that reached sharded informers (list items and watch events): kept, or dropped on the client as outside this replica's shards",
    labelNames: ["result"],
  });
  let shown: number[] = [];
  let sampled: { controller: string; shard: string }[] = [];
  return {
    hooks: {
      owned(shards) {
        for (const i of shown) owned.remove({ shard: String(i), range: rangeLabel(ranges[i]) });
        for (const i of shards) owned.set({ shard: String(i), range: rangeLabel(ranges[i]) }, 1);
        shown = [...shards];
      },
      members: (n) => members.set(undefined, n),
      handoff(kind, _shard, seconds) {
        handoffs.inc({ kind });
        if (kind === "released" && seconds !== undefined) drain.observe(undefined, seconds);
      },
      received: (kept) => received.inc({ result: kept ? "kept" : "dropped" }),
      clientSideFiltering(res) {
        clientSide.set({ group: res.group, version: res.version, kind: res.kind }, 1);
      },
    },
    reconciled(controller, shard, result) {
      reconciles.inc({ controller, shard: String(shard), result });
    },
    collect(sample) {
      registry.onCollect(() => {
        for (const l of sampled) {
          objects.remove(l);
          queued.remove(l);
        }
        sampled = [];
        for (const s of sample()) {
          const labels = { controller: s.controller, shard: String(s.shard) };
          objects.set(labels, s.objects);
          queued.set(labels, s.queued);
          sampled.push(labels);
        }
      });
    },
  };
}
