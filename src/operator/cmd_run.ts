/**
 * `run` (the default command): connects, checks that every controller's kind is served and
 * readable, then runs the controllers in a manager until SIGINT or SIGTERM, and stops
 * gracefully (in-flight reconciles finish; exit code 0). A second signal exits at once with
 * code 1; one within a second of the first is its echo (`deno task` forwards a terminal's
 * Ctrl-C, which also reaches the process directly) and is ignored, even after `run` returned.
 *
 * Start-up (see `_startup.ts`) waits out an API server that is unreachable or not ready yet,
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
 * Probes (`--health-probe-bind-address`, see `_cli_probes.ts`): `/healthz` checks that the
 * process answers, no watch is stalled and the renew loop is not wedged; `/readyz` that the
 * caches synced.
 *
 * With sharding (`operator({ sharding })`), every replica runs its controllers at once on
 * its share of the objects (see `ShardCoordinator`); losing its membership (no renewal of
 * its member Lease within the renew deadline, or the Lease deleted by others) exits with
 * code 1 at once, like losing the leader's Lease. A graceful stop drains the controllers,
 * then releases the shards and leaves.
 *
 * Watch scope: `--watch-namespace a,b`, else the `WATCH_NAMESPACE` environment variable, else
 * all namespaces. `POD_NAMESPACE` (set by the generated Deployment) is the operator's own
 * namespace — where its Lease lives — and does not limit what it watches; to watch only the
 * operator's namespace, as the seed did, pass `--watch-namespace=$(POD_NAMESPACE)`.
 *
 * @module
 */
import {
  EXIT,
  type Flags,
  type FlagSpec,
  parseDuration,
  parseList,
  UsageError,
} from "../util/args.ts";
import { operatorMetrics } from "./_metrics.ts";
import { parseBindAddress } from "../util/http_server.ts";
import { isDnsLabel } from "../util/names.ts";
import { operatorProbes } from "./_probes.ts";
import { serveProbes } from "../runtime/manager/health.ts";
import {
  type Command,
  type CommandContext,
  connect,
  env,
  type OperatorDefinition,
  operatorNamespace,
} from "./_command.ts";
import { type LeaderElectionEnd, leaderElector } from "../runtime/manager/leader_election.ts";
import { createManager, type LeaderElectionContext } from "../runtime/manager/manager.ts";
import { DEFAULT_SHARDS, type ShardingOptions } from "../runtime/sharding/coordinator.ts";
import { getLogger } from "../util/log.ts";
import { ApiServerWait } from "./_api_server_wait.ts";
import {
  awaitApiServer,
  cacheSyncDeadline,
  type StartupError,
  startupSetting,
} from "./_startup.ts";
import {
  METRICS_FLAGS,
  type MetricsSettings,
  metricsSettings,
  serveOperatorMetrics,
} from "./_metrics.ts";
import { describeLocalRun, runPlace } from "./_local.ts";
import { GRACEFUL_SHUTDOWN_MS } from "../deploy/manifests.ts";
import type { Admission } from "../webhook/admission.ts";
import type { OperatorWebhook } from "./options.ts";
import { type RunningWebhooks, serveWebhooks } from "../webhook/webhooks.ts";

const log = getLogger(["kubeno", "operator"]);

const FLAGS: readonly FlagSpec[] = [
  {
    name: "leader-elect",
    type: "boolean",
    description: "Run controllers only while holding the leader-election Lease",
  },
  {
    name: "leader-elect-namespace",
    type: "string",
    valueName: "NS",
    description: "Namespace of the Lease (default: the operator's namespace)",
  },
  {
    name: "leader-elect-lease-duration",
    type: "string",
    valueName: "DURATION",
    description: "How long a standby waits for a silent leader before taking over (default: 15s)",
  },
  {
    name: "leader-elect-renew-deadline",
    type: "string",
    valueName: "DURATION",
    description: "How long the leader retries renewing before it gives up (default: 10s)",
  },
  {
    name: "leader-elect-retry-period",
    type: "string",
    valueName: "DURATION",
    description: "Time between attempts to acquire or renew the Lease (default: 2s)",
  },
  {
    name: "shard-identity",
    type: "string",
    valueName: "ID",
    description:
      "This replica's identity in a sharded operator (default: POD_NAME, else the host name and a random suffix)",
  },
  {
    name: "shard-lease-duration",
    type: "string",
    valueName: "DURATION",
    description:
      "How long others wait for a silent replica before taking its shards (default: 15s)",
  },
  {
    name: "shard-renew-deadline",
    type: "string",
    valueName: "DURATION",
    description: "How long a replica retries renewing before it stops reconciling (default: 10s)",
  },
  {
    name: "shard-retry-period",
    type: "string",
    valueName: "DURATION",
    description: "Time between renewals of a replica's member Lease (default: 2s)",
  },
  {
    name: "startup-timeout",
    type: "string",
    valueName: "DURATION",
    default: "2m",
    description:
      "How long start-up waits for an unreachable or starting API server and for the caches to sync",
  },
  {
    name: "watch-namespace",
    type: "string",
    valueName: "NS[,NS]",
    description: "Watch only these namespaces (default: WATCH_NAMESPACE, else all)",
  },
  ...METRICS_FLAGS,
  {
    name: "graceful-shutdown-timeout",
    type: "string",
    valueName: "DURATION",
    default: `${GRACEFUL_SHUTDOWN_MS / 1_000}s`,
    description:
      "How long a stop waits for in-flight reconciles before it releases the Lease and exits",
  },
  {
    name: "health-probe-bind-address",
    type: "string",
    valueName: "ADDR",
    default: ":8081",
    description: "Address of /healthz and /readyz; 0 disables",
  },
  {
    name: "watch-stall-timeout",
    type: "string",
    valueName: "DURATION",
    default: "10m",
    description:
      "/healthz fails when a synced watch receives nothing for this long (a watch restarts itself after 5m)",
  },
  {
    name: "webhook-port",
    type: "string",
    valueName: "PORT",
    default: "9443",
    description: "Port of the admission webhook server",
  },
  {
    name: "webhook-cert-path",
    type: "string",
    valueName: "DIR",
    description: "Directory with tls.crt and tls.key (default: self-managed certificates)",
  },
];

/** How `run` runs, from its flags and the environment. */
export interface RunSettings {
  /** Namespaces to watch; empty for all. */
  watchNamespaces: string[];
  /** The Lease to hold and the election's timing, or undefined without leader election. */
  leaderElection?: {
    name: string;
    namespace: string;
    leaseDurationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
  };
  /** Sharding (identity and timings resolved), or undefined without. */
  sharding?: ShardingOptions & {
    name: string;
    shards: number;
    leaseDurationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
  };
  /** How long a synced watch may be silent before `/healthz` fails. */
  watchStallTimeoutMs: number;
  /** How long a stop waits for in-flight reconciles (`--graceful-shutdown-timeout`). */
  shutdownTimeoutMs: number;
  /** How long start-up waits for the API server and the first sync of the caches. */
  startupTimeoutMs: number;
  /** Where to serve `/metrics` (`:8443`, `127.0.0.1:8080`), or undefined when disabled. */
  metricsAddress?: string;
  /** How `/metrics` is served (see `_metrics.ts`), or undefined when disabled. */
  metrics?: MetricsSettings;
  /** Where to serve `/healthz` and `/readyz`, or undefined when disabled. */
  healthAddress?: string;
  /** The webhook server's port and supplied certificate directory, when there are webhooks. */
  webhook?: { port: number; certPath?: string };
}

/**
 * Resolves `run`'s settings from its flags, the operator's options and the environment.
 *
 * @param def The operator.
 * @param flags The parsed flags.
 * @returns The settings.
 * @throws {UsageError} For a malformed address, port or duration, or leader-election
 * durations that do not satisfy lease duration > renew deadline > 1.2 × retry period.
 */
export function runSettings(def: OperatorDefinition, flags: Flags): RunSettings {
  const str = (name: string) => typeof flags[name] === "string" ? flags[name] as string : undefined;
  const duration = (name: string, fallback: number) => {
    const v = str(name);
    return v === undefined ? fallback : parseDuration(v, name);
  };
  const elect = typeof flags["leader-elect"] === "boolean"
    ? flags["leader-elect"]
    : def.leaderElection.enabled;
  const port = Number(str("webhook-port") ?? "9443");
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`Flag "--webhook-port" takes a port number, not "${str("webhook-port")}"`);
  }
  const d = def.leaderElection;
  const lease = duration("leader-elect-lease-duration", d.leaseDurationMs ?? 15_000);
  const renew = duration("leader-elect-renew-deadline", d.renewDeadlineMs ?? 10_000);
  const retry = duration("leader-elect-retry-period", d.retryPeriodMs ?? 2_000);
  if (elect && !(lease > renew && renew > 1.2 * retry && retry > 0)) {
    throw new UsageError(
      `Leader election needs lease duration > renew deadline > 1.2 × retry period, got ` +
        `"--leader-elect-lease-duration=${lease}ms", "--leader-elect-renew-deadline=${renew}ms", ` +
        `"--leader-elect-retry-period=${retry}ms"`,
    );
  }
  const sh = def.sharding;
  if (sh && elect) {
    throw new UsageError(
      `Operator "${def.name}" is sharded: its replicas share the objects instead of electing a leader; drop "--leader-elect"`,
    );
  }
  const shardTimes = sh && {
    leaseDurationMs: duration("shard-lease-duration", sh.leaseDurationMs ?? 15_000),
    renewDeadlineMs: duration("shard-renew-deadline", sh.renewDeadlineMs ?? 10_000),
    retryPeriodMs: duration("shard-retry-period", sh.retryPeriodMs ?? 2_000),
  };
  if (
    shardTimes && !(shardTimes.leaseDurationMs > shardTimes.renewDeadlineMs &&
      shardTimes.renewDeadlineMs > 1.2 * shardTimes.retryPeriodMs && shardTimes.retryPeriodMs > 0)
  ) {
    throw new UsageError(
      `Sharding needs lease duration > renew deadline > 1.2 × retry period, got ` +
        `"--shard-lease-duration=${shardTimes.leaseDurationMs}ms", ` +
        `"--shard-renew-deadline=${shardTimes.renewDeadlineMs}ms", ` +
        `"--shard-retry-period=${shardTimes.retryPeriodMs}ms"`,
    );
  }
  const watchStallTimeoutMs = duration("watch-stall-timeout", 600_000);
  if (!(watchStallTimeoutMs > 0)) {
    throw new UsageError(`Flag "--watch-stall-timeout" takes a positive duration`);
  }
  const startupTimeoutMs = duration("startup-timeout", 120_000);
  if (!(startupTimeoutMs > 0)) {
    throw new UsageError(`Flag "--startup-timeout" takes a positive duration`);
  }
  for (const flag of ["namespace", "leader-elect-namespace"]) {
    const ns = str(flag);
    if (ns !== undefined && !isDnsLabel(ns)) {
      throw new UsageError(
        `Flag "--${flag}" takes a namespace name (lower-case letters, digits, "-"), not "${ns}"`,
      );
    }
  }
  const watch = str("watch-namespace") ?? env("WATCH_NAMESPACE");
  const watchNamespaces = watch ? parseList(watch) : [...def.watchNamespaces];
  const badWatch = watchNamespaces.find((ns) => !isDnsLabel(ns));
  if (badWatch !== undefined) {
    const from = str("watch-namespace") !== undefined
      ? 'Flag "--watch-namespace"'
      : "WATCH_NAMESPACE";
    throw new UsageError(
      `${from} takes namespace names (lower-case letters, digits, "-"), not "${badWatch}"`,
    );
  }
  const settings: RunSettings = {
    watchNamespaces,
    leaderElection: elect
      ? {
        name: d.leaseName,
        namespace: str("leader-elect-namespace") ?? d.namespace ??
          operatorNamespace({ def, flags }),
        leaseDurationMs: lease,
        renewDeadlineMs: renew,
        retryPeriodMs: retry,
      }
      : undefined,
    ...(sh && shardTimes
      ? {
        sharding: {
          shards: sh.shards ?? DEFAULT_SHARDS,
          key: sh.key,
          name: sh.name ?? def.name,
          ...(sh.namespace ? { namespace: sh.namespace } : {}),
          identity: str("shard-identity") ?? sh.identity ?? env("POD_NAME"),
          ...shardTimes,
        },
      }
      : {}),
    watchStallTimeoutMs,
    shutdownTimeoutMs: duration("graceful-shutdown-timeout", GRACEFUL_SHUTDOWN_MS),
    startupTimeoutMs,
    metricsAddress: metricsSettings(flags)?.address,
    metrics: metricsSettings(flags),
    healthAddress: bindAddress(
      str("health-probe-bind-address") ?? ":8081",
      "health-probe-bind-address",
    ),
    // Conversion webhooks of multi-version resources are served by the same server.
    webhook: def.webhooks.length || def.conversions.length
      ? { port, certPath: str("webhook-cert-path") }
      : undefined,
  };
  checkPorts(settings);
  return settings;
}

/** Two servers of one process cannot share a port: say which flags collide, before binding. */
function checkPorts(s: RunSettings): void {
  const used = new Map<number, string>();
  const claims: [string | undefined, string][] = [
    [s.metrics?.address, "--metrics-bind-address"],
    [s.healthAddress, "--health-probe-bind-address"],
    [s.webhook?.port ? `:${s.webhook.port}` : undefined, "--webhook-port"],
  ];
  for (const [address, flag] of claims) {
    const port = address ? parseBindAddress(address)?.port : undefined;
    if (!port) continue;
    const other = used.get(port);
    if (other) {
      throw new UsageError(
        `Flags "${other}" and "${flag}" both use port ${port}; give each server its own port`,
      );
    }
    used.set(port, flag);
  }
}

function bindAddress(address: string, flag: string): string | undefined {
  try {
    return parseBindAddress(address) ? address : undefined;
  } catch {
    throw new UsageError(`Flag "--${flag}" takes HOST:PORT, :PORT or 0, not "${address}"`);
  }
}

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

Before starting it checks that each controller's kind is installed and readable. An API
server that is unreachable or still starting (refused connections, timeouts, 429, 5xx) is
waited out with back-off, logged once per change, while /healthz passes and /readyz fails;
--startup-timeout bounds that wait and the first sync of the caches, then it exits 1. A kind
that is not installed (run "install"), refused credentials (401: the kubeconfig) and a
forbidden list (403: the RBAC from "manifests") exit 1 at once.

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
server restarts, raise the renew deadline and the lease duration together (e.g. 30s/20s):
a standby then takes over a dead leader that much later.

/healthz fails when a watch is stalled or the Lease renewals are wedged; /readyz passes
once the caches have synced (standbys included).`,
  flags: FLAGS,
  async run(ctx: CommandContext): Promise<number> {
    const settings = runSettings(ctx.def, ctx.flags);
    const metrics = operatorMetrics({ shards: settings.sharding?.shards });
    using client = await connect(ctx, { onRequest: metrics.onRequest });
    // Outside a cluster nothing may depend on the operator's namespace: see _local.ts.
    const place = runPlace(ctx, client, settings);

    const stop = new AbortController();
    let signals = 0;
    let firstSignalAt = 0;
    const onSignal = () => {
      // `deno task` forwards the terminal's Ctrl-C, so one keypress can arrive twice within
      // milliseconds; only a signal sent later means "stop waiting".
      if (signals > 0 && Date.now() - firstSignalAt < ECHO_WINDOW_MS) return;
      firstSignalAt ||= Date.now();
      if (++signals > 1) {
        ctx.err(`${ctx.def.name}: Second signal received; exiting without waiting`);
        Deno.exit(EXIT.failure);
      }
      log.info("Received a termination signal; shutting down");
      stop.abort();
    };
    const sigs: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
    for (const s of sigs) Deno.addSignalListener(s, onSignal);

    const le = settings.leaderElection;
    // The elector runs on its own signal, not the manager's: on a graceful stop the Lease is
    // released only after the controllers drained, so that the standby never writes while
    // this replica still does.
    const electorStop = new AbortController();
    let campaign: Promise<LeaderElectionEnd> | undefined;
    const elector = le
      ? leaderElector({
        client,
        name: le.name,
        namespace: le.namespace,
        leaseDurationMs: le.leaseDurationMs,
        renewDeadlineMs: le.renewDeadlineMs,
        retryPeriodMs: le.retryPeriodMs,
        metrics: metrics.leaderElection(le.name),
        onStoppedLeading: (reason) => {
          if (reason !== "lost") return;
          // No fencing: another replica may hold the Lease already. Stop writing now, not
          // after in-flight reconciles finish, and let the pod restart as a standby.
          log.error("Lost the Lease {lease}; exiting so that this replica restarts", {
            lease: `${le.namespace}/${le.name}`,
          });
          ctx.err(`${ctx.def.name}: Lost the Lease "${le.namespace}/${le.name}"; exiting`);
          Deno.exit(EXIT.failure);
        },
      })
      : undefined;
    const manager = createManager({
      client,
      controllers: ctx.def.controllers,
      namespaces: settings.watchNamespaces.length ? settings.watchNamespaces : undefined,
      metrics: metrics.manager,
      shutdownTimeoutMs: settings.shutdownTimeoutMs,
      sharding: settings.sharding
        ? {
          ...settings.sharding,
          namespace: settings.sharding.namespace ?? place.namespace,
          metrics: metrics.sharding,
          onLost: (reason) => {
            // As with a lost Lease: others may take this replica's shards now. Stop writing
            // at once and let the pod restart as a new member.
            log.error(
              "Lost sharding membership ({reason}); exiting so that this replica restarts",
              {
                reason,
              },
            );
            ctx.err(`${ctx.def.name}: Lost sharding membership: ${reason}; exiting`);
            Deno.exit(EXIT.failure);
          },
        }
        : undefined,
      leaderElection: elector
        ? (lc: LeaderElectionContext) => {
          campaign = elector.run(electorStop.signal);
          // Shutting down before winning: stop campaigning. Once leading, the Lease is
          // released after the manager stopped (below).
          lc.signal.addEventListener("abort", () => {
            if (!elector.isLeader) electorStop.abort();
          }, { once: true });
          return elector.elected;
        }
        : undefined,
    });
    if (settings.sharding) metrics.shards(manager);
    const probes = operatorProbes({
      informers: () => manager.informers?.all(),
      stopping: () => stop.signal.aborted,
      elector: () => elector,
      ...(settings.sharding ? { sharding: () => manager.sharding } : {}),
      watchStallTimeoutMs: settings.watchStallTimeoutMs,
    });
    const served = new AbortController();
    let webhooks: RunningWebhooks | undefined;
    // Probes and metrics are served from the first wait for the API server on, so that a
    // kubelet sees the process alive (and not ready) meanwhile; a refusal before that
    // (404, 401, 403) exits with its one line and nothing else.
    const endpointsFailed = new AbortController();
    let endpoints: Promise<void> | undefined;
    const serveEndpoints = () =>
      endpoints ??= (async () => {
        if (settings.metrics) {
          const endpoint = await serveOperatorMetrics(
            metrics.registry,
            settings.metrics,
            client,
            served.signal,
          );
          log.info("Serving metrics at {url}metrics{auth}", {
            url: endpoint?.url,
            auth: settings.metrics.secure ? " (authenticated and authorized)" : "",
          });
        }
        if (settings.healthAddress) {
          const endpoint = await serveProbes(probes, {
            address: settings.healthAddress,
            signal: served.signal,
          });
          log.info("Serving probes at {url}healthz and {url}readyz", { url: endpoint?.url });
        }
      })();
    const startup = new ApiServerWait({
      timeoutMs: settings.startupTimeoutMs,
      flag: "--startup-timeout",
      server: client.server,
      signal: AbortSignal.any([stop.signal, endpointsFailed.signal]),
      onWaiting: (waiting) => {
        if (waiting) serveEndpoints().catch((err) => endpointsFailed.abort(err));
      },
    });
    let startupFailure: StartupError | undefined;
    try {
      try {
        await awaitApiServer(client, ctx.def, settings.watchNamespaces, startup);
      } catch (err) {
        if (stop.signal.aborted && !endpointsFailed.signal.aborted) return EXIT.ok;
        throw err;
      }
      await serveEndpoints();
      if (settings.webhook) {
        // Outside a cluster (local development, tests) the server listens on loopback and
        // takes over the configurations by URL until it stops, as envtest registers them;
        // inside, the Service does.
        const local = place.local;
        webhooks = await serveWebhooks(client, ctx.def.webhooks.filter(isAdmission), {
          name: ctx.def.name,
          namespace: place.namespace,
          port: settings.webhook.port,
          certDir: settings.webhook.certPath,
          local,
          conversions: ctx.def.conversions,
          signal: served.signal,
        });
        const serving = webhooks;
        probes.addReadyz("webhook", () => {
          if (serving.server.port <= 0) throw new Error("Webhook server is not listening");
        });
        log.info("Serving admission webhooks at https://{host}:{port} ({mode})", {
          host: local ? "127.0.0.1" : "[::]",
          port: webhooks.server.port,
          mode: local ? "registered by URL until exit" : "behind the Service",
        });
      }
      if (place.local) {
        // One plain line (braces escaped: it is the message template itself).
        const line = describeLocalRun(place, settings, webhooks, client.server);
        log.info(line.replaceAll("{", "{{").replaceAll("}", "}}"));
      }
      log.info("Starting {name} {version} with {count} controllers", {
        name: ctx.def.name,
        version: ctx.def.version,
        count: ctx.def.controllers.length,
      });
      using _deadline = cacheSyncDeadline({
        remainingMs: startup.remainingMs,
        setting: startupSetting(settings.startupTimeoutMs),
        synced: () => manager.ready(),
        informers: () => manager.informers?.all(),
        onExpired: (err) => {
          if (stop.signal.aborted) return; // already shutting down
          startupFailure = err;
          stop.abort(err);
        },
      });
      await manager.start(stop.signal);
      if (startupFailure) throw startupFailure;
      return EXIT.ok;
    } finally {
      // The manager has stopped and its controllers drained: now hand the Lease over.
      electorStop.abort();
      await campaign?.catch(() => {});
      await webhooks?.close().catch(() => {});
      served.abort();
      for (const s of sigs) Deno.removeSignalListener(s, onSignal);
      // The echo of the Ctrl-C that stopped us (`deno task` forwards its copy) may land after
      // the listeners are gone, while the caller still cleans up (`deno task dev` stops its
      // control plane): without a listener it would kill the process with code 130.
      if (signals > 0) swallowEchoes(sigs, firstSignalAt + ECHO_WINDOW_MS);
    }
  },
};

/** How long after a stopping signal another one counts as its echo, not a new request. */
const ECHO_WINDOW_MS = 1_000;

/**
 * Ignores `sigs` until `until` (epoch ms), then restores their default action. The timer does
 * not keep the process alive.
 */
function swallowEchoes(sigs: Deno.Signal[], until: number): void {
  const ignore = () => {};
  for (const s of sigs) Deno.addSignalListener(s, ignore);
  const timer = setTimeout(() => {
    for (const s of sigs) Deno.removeSignalListener(s, ignore);
  }, Math.max(0, until - Date.now()));
  Deno.unrefTimer(timer);
}

/** Webhooks from `admission()` are served by the operator; others only add manifests. */
function isAdmission(w: OperatorWebhook): w is Admission {
  const a = w as Partial<Admission>;
  return typeof a.mutate === "function" && typeof a.validate === "function" && !!a.resource;
}
