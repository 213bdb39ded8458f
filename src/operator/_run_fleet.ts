// `run` of a fleet operator (`operator({ fleet })`): the cluster of `--kubeconfig` (or the
// pod's) is the hub; the fleet engages every member its provider names, each with its own
// manager. Probes and metrics are served from the start:
//
// - `/healthz`: the process answers.
// - `/readyz`: ready once the hub's caches synced; its `clusters` check has one line per
//   engaged member in `/readyz?verbose` (`member-1: ready`, `member-2: unhealthy`, ...). An
//   unreachable member is listed but does not fail readiness: one member's outage must not
//   take the operator serving the others out of service (the fleet itself disengages it after
//   `unreachableAfterMs`, when set).
// - `/metrics`: the process and client families plus the fleet's `kubeno_cluster_*`.
//
// SIGINT/SIGTERM: every member is disengaged (in-flight reconciles get
// `--graceful-shutdown-timeout`), one line per member, then exit 0.
import { EXIT } from "../util/args.ts";
import type { CommandContext } from "./_command.ts";
import { connect } from "./_command.ts";
import { operatorMetrics, serveOperatorMetrics } from "./_metrics.ts";
import { runSettings } from "./_run_settings.ts";
import { stopSignals } from "./cmd_run.ts";
import { createFleet } from "../runtime/cluster/fleet.ts";
import { clusterMetrics } from "../metrics/cluster_metrics.ts";
import { HealthChecks, serveProbes } from "../runtime/manager/health.ts";
import { getLogger } from "../util/log.ts";

const log = getLogger(["kubeno", "operator"]);

/**
 * Runs a fleet operator until SIGINT or SIGTERM.
 *
 * @param ctx The command context; `ctx.def.fleet` is set.
 * @returns The exit code.
 */
export async function runFleet(ctx: CommandContext): Promise<number> {
  const fleetDef = ctx.def.fleet!;
  const settings = runSettings(ctx.def, ctx.flags);
  const metrics = operatorMetrics();
  using hub = await connect(ctx, { onRequest: metrics.onRequest });
  using signals = stopSignals({ name: ctx.def.name, err: ctx.err, exit: ctx.exit });
  const perCluster = clusterMetrics(metrics.registry);
  const fleet = createFleet({
    controllers: ctx.def.controllers,
    clusters: fleetDef.clusters,
    hub,
    hubReads: fleetDef.hubReads,
    hubNamespace: fleetDef.hubNamespace,
    unreachableAfterMs: fleetDef.unreachableAfterMs,
    disengageTimeoutMs: settings.shutdownTimeoutMs,
    metrics: (cluster) => perCluster.hooks(cluster),
    clientOptions: {
      fieldManager: ctx.def.name,
      userAgent: `${ctx.def.name}/${ctx.def.version} kubeno`,
    },
    manager: settings.watchNamespaces.length ? { namespaces: settings.watchNamespaces } : {},
    // The fleet logs each engage and disengage itself ("Disengaged cluster member-1: ...").
    onCluster: (event) => perCluster.onCluster(event),
  });
  const probes = new HealthChecks();
  probes.addHealthz("ping", () => {});
  probes.addReadyz("clusters", fleet.readyzCheck());
  const served = new AbortController();
  try {
    if (settings.healthAddress) {
      const endpoint = await serveProbes(probes, {
        address: settings.healthAddress,
        signal: served.signal,
      });
      log.info("Serving probes at {url}healthz and {url}readyz", { url: endpoint?.url });
    }
    if (settings.metrics) {
      const endpoint = await serveOperatorMetrics(
        metrics.registry,
        settings.metrics,
        hub,
        served.signal,
      );
      log.info("Serving metrics at {url}metrics", { url: endpoint?.url });
    }
    log.info("Starting {name} {version} with {count} controllers on the clusters of {provider}", {
      name: ctx.def.name,
      version: ctx.def.version,
      count: ctx.def.controllers.length,
      provider: fleetDef.clusters.name,
    });
    await fleet.start(signals.signal);
    log.info("Every cluster disengaged; stopped");
    return EXIT.ok;
  } finally {
    served.abort();
  }
}
