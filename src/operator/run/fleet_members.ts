// The member clusters of a fleet operator (`operator({ fleet })`) under `run`'s one manager,
// whose client is the hub: the provider and options of `operator({ fleet })`, each member's
// controller families with a `cluster` label, `--graceful-shutdown-timeout` for a member's
// in-flight reconciles on disengage, and a user agent naming the replica. The manager's
// sharding (`operator({ fleet, sharding })`) spreads the members over the replicas, one Lease
// per member on the hub.
import type { CommandContext } from "../command/command.ts";
import { createFleet, type Fleet } from "../../runtime/cluster/fleet.ts";
import type { ClusterMetrics } from "../../metrics/cluster_metrics.ts";
import type { RunSettings } from "./run_settings.ts";

/**
 * The fleet `run` gives its manager.
 *
 * @param ctx The command context; `ctx.def.fleet` is set.
 * @param settings `run`'s settings.
 * @param metrics The per-cluster families.
 * @param identity This replica's identity among sharded replicas.
 * @returns The fleet.
 */
export function operatorFleet(
  ctx: CommandContext,
  settings: RunSettings,
  metrics: ClusterMetrics,
  identity: string | undefined,
): Fleet {
  const def = ctx.def.fleet!;
  return createFleet({
    clusters: def.clusters,
    hubReads: def.hubReads,
    hubNamespace: def.hubNamespace,
    unreachableAfterMs: def.unreachableAfterMs,
    disengageTimeoutMs: settings.shutdownTimeoutMs,
    metrics: (cluster) => metrics.hooks(cluster),
    component: ctx.def.name,
    clientOptions: {
      fieldManager: ctx.def.name,
      // With replicas, the identity tells them apart in a member's audit log.
      userAgent: `${ctx.def.name}/${ctx.def.version} kubeno${identity ? ` (${identity})` : ""}`,
    },
    // The fleet logs each engage and disengage itself ("Disengaged cluster member-1: ...").
    onCluster: (event) => metrics.onCluster(event),
  });
}
