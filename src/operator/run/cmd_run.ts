/**
 * `run` (the default command): connects, checks that every controller's kind is served and
 * readable, then runs the controllers in a manager until SIGINT or SIGTERM, and stops
 * gracefully (in-flight reconciles finish; exit code 0). A second signal exits at once with
 * code 1; one within a second of the first is its echo (`deno task` forwards a terminal's
 * Ctrl-C, which also reaches the process directly) and is ignored, even after `run` returned.
 *
 * Start-up (see `startup.ts`) waits out an API server that is unreachable or not ready yet,
 * with back-off, while `/healthz` passes and `/readyz` fails, up to `--startup-timeout`
 * (which also bounds the first sync of the caches, like controller-runtime's
 * `CacheSyncTimeout`). A kind that is not installed (404), refused credentials (401) and a
 * forbidden list (403) exit 1 at once with one line naming the fix.
 *
 * With leader election (`--leader-elect`), controllers run only while this replica holds the
 * Lease; informers run (and `/readyz` passes) on standbys too, so a takeover starts from warm
 * caches. Losing the Lease exits the process with code 1 at once — without waiting for
 * in-flight reconciles, since another replica may already be writing — so that the pod
 * restarts as a standby. A graceful stop drains the controllers first and then releases the
 * Lease, so a standby takes over within one retry period and never while this replica still
 * writes.
 *
 * Probes (`--health-probe-bind-address`, see `_run_runnables.ts`): `/healthz` checks that the
 * process answers, no watch is stalled and the renew loop is not wedged; `/readyz` that the
 * caches synced.
 *
 * With sharding (`operator({ sharding })`), every replica runs its controllers at once on
 * its share of the objects (see `ShardCoordinator`); losing its membership (no renewal of
 * its member Lease within the renew deadline, or the Lease deleted by others) exits with
 * code 1 at once, like losing the leader's Lease. A graceful stop drains the controllers,
 * then releases the shards and leaves.
 *
 * Memory: before anything else `run` sizes the V8 heap to the container's memory limit (see
 * `heap_sizing.ts`).
 *
 * Watch scope: `--watch-namespace a,b`, else the `WATCH_NAMESPACE` environment variable, else
 * all namespaces. `POD_NAMESPACE` (set by the generated Deployment) is the operator's own
 * namespace — where its Lease lives — and does not limit what it watches; to watch only the
 * operator's namespace, as the seed did, pass `--watch-namespace=$(POD_NAMESPACE)`.
 *
 * @module
 */
import { EXIT } from "../../util/args.ts";
import { operatorMetrics } from "./_metrics.ts";
import { operatorProbes, runRunnables } from "./_run_runnables.ts";
import {
  type Command,
  type CommandContext,
  connect,
  operatorNamespace,
} from "../command/command.ts";
import { createManager, LeadershipLostError, type Manager } from "../../runtime/manager/manager.ts";
import { ApiServerWait } from "../command/api_server_wait.ts";
import { awaitApiServer, awaitHub } from "./startup.ts";
import { RUN_FLAGS, runPlace, runSettings } from "./run_settings.ts";
import { sizeHeap } from "./heap_sizing.ts";
import { operatorFleet } from "./fleet_members.ts";
import { replicaIdentity } from "../../runtime/sharding/coordinator.ts";
import { stopSignals } from "./stop_signals.ts";
import { HealthCheckError } from "../../runtime/manager/health.ts";

/** The `run` command. */
export const runCommand: Command = {
  name: "run",
  summary: "Run the controllers until SIGINT/SIGTERM",
  description:
    `Runs the operator's controllers until SIGINT or SIGTERM, then stops gracefully: in-flight
reconciles finish (for up to --graceful-shutdown-timeout; then the Lease is released, within
the renew deadline) and the process exits 0 (a second signal exits at once with 1).

Outside a cluster (no KUBERNETES_SERVICE_HOST) it needs no namespace of its own: the webhook
certificate stays in memory, the webhook configurations point at it by URL until it stops and
are then handed back as they were, and the Lease goes to --namespace, else the kubeconfig
context's namespace. It says so in one line at start.

Before starting it checks that each controller's kind (and each kind marked required) is
installed and readable. An API server that is unreachable or still starting (refused
connections, timeouts, 429, 5xx) is waited out with back-off, logged once per change, while
/healthz passes and /readyz fails;
--startup-timeout bounds that wait and the first sync of the caches, then it exits 1. A kind
that is not installed (run "install"), refused credentials (401: the kubeconfig) and a
forbidden list (403: the RBAC from "manifests") exit 1 at once. Other kinds the controllers own,
watch or read that are not built into Kubernetes are optional unless marked required: while
their CRD is not installed the operator runs without them (/readyz?verbose lists them), and it
caches them within seconds of the CRD being established, without a restart.

The operator's namespace (for the Lease) is --namespace, else POD_NAMESPACE, else
<name>-system. It watches --watch-namespace, else WATCH_NAMESPACE, else the namespaces of
the operator's watchNamespaces option, else all namespaces.

A sharded operator (operator({ sharding })) runs every replica's controllers at once, each on
the shards it holds: Leases named <name>-shard-NN and one <name>-member-<identity> per replica
in the operator's namespace (kubectl get leases -l shards.kubeno.dev/of=<name>). Its identity
is --shard-identity, else POD_NAME, else the host name with a random suffix. A replica that
cannot renew its member Lease for --shard-renew-deadline (10s) exits 1; others take its shards
once they saw it silent for --shard-lease-duration (15s). A graceful stop drains, then releases
its shards at once.

With --leader-elect, controllers run only while this replica holds the Lease named after
the operator (in --leader-elect-namespace, else the operator's namespace). Losing the Lease
exits at once with 1; a graceful stop drains the controllers, then releases the Lease so a
standby takes over within one retry period. Durations take Go's form: 15s, 500ms, 1m30s.

API server outages and the Lease: the leader renews every retry period (2s) and gives up
leading, exiting 1, when no renewal succeeded for the renew deadline (10s); a standby takes
over once it has seen the Lease unchanged for the lease duration (15s). An outage costs the
leader its Lease only when it outlasts the renew deadline less up to two retry periods: with
the defaults, any outage under 6s is safe and most under 8-10s are. Standbys, and replicas
starting meanwhile, keep waiting and campaigning through any outage. To ride out longer API
server restarts, raise both, keeping lease duration > renew deadline (e.g.
--leader-elect-renew-deadline=20s --leader-elect-lease-duration=30s): a standby then takes
over a dead leader that much later.

/healthz fails when a watch is stalled or the Lease renewals are wedged; /readyz passes
once the caches have synced (standbys included).

Memory: first of all, run sizes the V8 heap to the container's memory limit (cgroup v2
memory.max, cgroup v1 memory.limit_in_bytes; --memory-limit overrides, --memory-limit=none
turns sizing off): 70% of the limit above 32 MiB, the rest left to native memory. When V8's
heap limit is larger, it restarts itself once in place (same pid, DENO_V8_FLAGS carrying the
budget) where FFI is permitted (deno run -A), and otherwise logs the DENO_V8_FLAGS to set; the
generated Deployment sets them from its limit, so no restart is needed there.

A fleet operator (operator({ fleet })) treats the cluster of --kubeconfig as the hub and
runs the controllers on every member its provider names. /readyz passes once the hub's
caches synced; "/readyz?verbose" lists each member (ready, not synced, unhealthy, failed)
without failing on one. SIGINT/SIGTERM disengage every member, then exit 0. With sharding
(operator({ fleet, sharding })) the replicas share the members, one Lease per member on the hub
in the operator's namespace: each member is engaged by one replica at a time, and disengaged
(drained) by it before another takes it; --shard-* flags as above.`,
  flags: RUN_FLAGS,
  async run(ctx: CommandContext): Promise<number> {
    const settings = runSettings(ctx.def, ctx.flags);
    // First, before anything connects or listens: this may replace the process (see there).
    sizeHeap(settings.memoryLimit);
    // Local configuration first: a certificate directory that cannot be read fails at once,
    // not after waiting the whole start-up timeout for an API server that may be away.
    if (settings.webhook?.certPath) {
      const { readCertificateDir } = await import("../../webhook/cert_dir.ts");
      await readCertificateDir(settings.webhook.certPath);
    }
    // A fleet operator's client is the hub; its controllers run on the members (see there).
    const fleeting = ctx.def.fleet !== undefined;
    const sh = settings.sharding;
    const metrics = operatorMetrics({ shards: fleeting ? undefined : sh?.shards, fleet: fleeting });
    using client = await connect(ctx, { onRequest: metrics.onRequest });
    // Outside a cluster nothing may depend on the operator's namespace: see run_settings.ts.
    const place = runPlace(ctx, client, settings);
    using signals = stopSignals({ name: ctx.def.name, err: ctx.err, exit: ctx.exit });
    const le = settings.leaderElection;
    // A fleet's member Leases go where `manifests` grants them, in or out of a cluster.
    const identity = sh && fleeting ? sh.identity ?? replicaIdentity() : sh?.identity;
    const fleet = fleeting ? operatorFleet(ctx, settings, metrics.clusters!, identity) : undefined;
    // Probes and metrics are served from the first wait for the API server on (`serve()`),
    // so that a kubelet sees the process alive (and not ready) meanwhile; a refusal before
    // that (404, 401, 403) exits with its one line and nothing else.
    let startup: ApiServerWait | undefined;
    let reached = false;
    const probes = operatorProbes({
      informers: () => manager.caches(),
      stopping: () => manager.stopping,
      elector: () => manager.elector,
      ...(sh ? { sharding: () => manager.sharding } : {}),
      missingKinds: () => manager.missingKinds(),
      watchStallTimeoutMs: settings.watchStallTimeoutMs,
    });
    if (fleet) {
      // Until the hub answered, `/readyz` fails here; `clusters` lists the members without
      // failing on one: one member's outage must not take the replica out of service.
      probes.addReadyz("hub", () => {
        if (!reached) {
          throw new HealthCheckError(`Waiting for the hub's API server ${client.server}`);
        }
      }).addReadyz("clusters", fleet.readyzCheck());
    }
    const manager: Manager = createManager({
      client,
      controllers: ctx.def.controllers,
      namespaces: settings.watchNamespaces.length ? settings.watchNamespaces : undefined,
      metrics: metrics.manager,
      shutdownTimeoutMs: settings.shutdownTimeoutMs,
      leaderElection: le && { ...le, metrics: metrics.leaderElection(le.name) },
      sharding: sh && {
        ...sh,
        identity,
        namespace: sh.namespace ?? (fleet ? operatorNamespace(ctx) : place.namespace),
        metrics: metrics.sharding,
      },
      fleet,
      startup: async ({ signal, serve }) => {
        startup = new ApiServerWait({
          timeoutMs: settings.startupTimeoutMs,
          flag: "--startup-timeout",
          server: client.server,
          signal,
          onWaiting: (waiting) => void (waiting && serve()),
        });
        await (fleet
          ? awaitHub(client, startup)
          : awaitApiServer(client, ctx.def, settings.watchNamespaces, startup));
        reached = true;
      },
      runnables: runRunnables({
        ctx,
        settings,
        metrics,
        client,
        place,
        manager: () => manager,
        remainingMs: () => startup?.remainingMs ?? settings.startupTimeoutMs,
        probes,
      }),
    });
    if (sh && !fleet) metrics.shards(manager);
    metrics.caches(() => manager.caches());
    try {
      await manager.start(signals.signal);
      return EXIT.ok;
    } catch (err) {
      if (!(err instanceof LeadershipLostError)) throw err;
      // Another replica may be writing already: the manager stopped without waiting for
      // in-flight reconciles; exit 1 so that the pod restarts as a standby (a new member).
      ctx.err(`${ctx.def.name}: ${err.message}; exiting`);
      return EXIT.failure;
    }
  },
};
