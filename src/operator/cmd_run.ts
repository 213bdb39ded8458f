/**
 * `run` (the default command): connects, checks that every controller's kind is served and
 * readable, then runs the controllers in a manager until SIGINT or SIGTERM, and stops
 * gracefully (in-flight reconciles finish; exit code 0). A second signal exits at once with
 * code 1.
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
 * Watch scope: `--watch-namespace a,b`, else the `WATCH_NAMESPACE` environment variable, else
 * all namespaces. `POD_NAMESPACE` (set by the generated Deployment) is the operator's own
 * namespace — where its Lease lives — and does not limit what it watches; to watch only the
 * operator's namespace, as the seed did, pass `--watch-namespace=$(POD_NAMESPACE)`.
 *
 * @module
 */
import { isNotFound } from "../client/api_error.ts";
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
import type { Client } from "../client/client.ts";
import { type LeaderElectionEnd, leaderElector } from "../runtime/manager/leader_election.ts";
import { createManager, type LeaderElectionContext } from "../runtime/manager/manager.ts";
import { getLogger } from "../util/log.ts";
import { serveMetrics } from "../metrics/registry.ts";
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
    name: "watch-namespace",
    type: "string",
    valueName: "NS[,NS]",
    description: "Watch only these namespaces (default: WATCH_NAMESPACE, else all)",
  },
  {
    name: "metrics-bind-address",
    type: "string",
    valueName: "ADDR",
    default: ":8080",
    description: "Address of /metrics; 0 disables",
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
  /** How long a synced watch may be silent before `/healthz` fails. */
  watchStallTimeoutMs: number;
  /** Where to serve `/metrics` (`:8080`, `127.0.0.1:8080`), or undefined when disabled. */
  metricsAddress?: string;
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
  const watchStallTimeoutMs = duration("watch-stall-timeout", 600_000);
  if (!(watchStallTimeoutMs > 0)) {
    throw new UsageError(`Flag "--watch-stall-timeout" takes a positive duration`);
  }
  return {
    watchNamespaces: str("watch-namespace") ?? env("WATCH_NAMESPACE")
      ? parseList(str("watch-namespace") ?? env("WATCH_NAMESPACE"))
      : [...def.watchNamespaces],
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
    watchStallTimeoutMs,
    metricsAddress: bindAddress(str("metrics-bind-address") ?? ":8080", "metrics-bind-address"),
    healthAddress: bindAddress(
      str("health-probe-bind-address") ?? ":8081",
      "health-probe-bind-address",
    ),
    webhook: def.webhooks.length ? { port, certPath: str("webhook-cert-path") } : undefined,
  };
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
reconciles finish and the process exits 0 (a second signal exits at once with 1). Before
starting it checks that each controller's kind is installed and readable.

The operator's namespace (for the Lease) is --namespace, else POD_NAMESPACE, else
<name>-system. It watches --watch-namespace, else WATCH_NAMESPACE, else the namespaces of
the operator's watchNamespaces option, else all namespaces.

With --leader-elect, controllers run only while this replica holds the Lease named after
the operator (in --leader-elect-namespace, else the operator's namespace). Losing the Lease
exits at once with 1; a graceful stop drains the controllers, then releases the Lease so a
standby takes over within one retry period. Durations take Go's form: 15s, 500ms, 1m30s.

/healthz fails when a watch is stalled or the Lease renewals are wedged; /readyz passes
once the caches have synced (standbys included).`,
  flags: FLAGS,
  async run(ctx: CommandContext): Promise<number> {
    const settings = runSettings(ctx.def, ctx.flags);
    const metrics = operatorMetrics();
    using client = await connect(ctx, { onRequest: metrics.onRequest });
    await preflight(client, ctx.def, settings.watchNamespaces);

    const stop = new AbortController();
    let signals = 0;
    let firstSignalAt = 0;
    const onSignal = () => {
      // `deno task` forwards the terminal's Ctrl-C, so one keypress can arrive twice within
      // milliseconds; only a signal sent later means "stop waiting".
      if (signals > 0 && Date.now() - firstSignalAt < 1_000) return;
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
    const probes = operatorProbes({
      informers: () => manager.informers?.all(),
      stopping: () => stop.signal.aborted,
      elector: () => elector,
      watchStallTimeoutMs: settings.watchStallTimeoutMs,
    });
    const served = new AbortController();
    let webhooks: RunningWebhooks | undefined;
    try {
      if (settings.webhook) {
        // Outside a cluster (local development, tests) the server listens on loopback and
        // registers URL-based configurations, as envtest does; inside, the Service does.
        const local = !env("KUBERNETES_SERVICE_HOST");
        webhooks = await serveWebhooks(client, ctx.def.webhooks.filter(isAdmission), {
          name: ctx.def.name,
          namespace: operatorNamespace(ctx),
          port: settings.webhook.port,
          certDir: settings.webhook.certPath,
          local,
          signal: served.signal,
        });
        const serving = webhooks;
        probes.addReadyz("webhook", () => {
          if (serving.server.port <= 0) throw new Error("Webhook server is not listening");
        });
        log.info("Serving admission webhooks at https://{host}:{port} ({mode})", {
          host: local ? "127.0.0.1" : "0.0.0.0",
          port: webhooks.server.port,
          mode: local ? "registered by URL for local development" : "behind the Service",
        });
      }
      if (settings.metricsAddress) {
        const endpoint = await serveMetrics(metrics.registry, {
          address: settings.metricsAddress,
          signal: served.signal,
        });
        log.info("Serving metrics at {url}metrics", { url: endpoint?.url });
      }
      if (settings.healthAddress) {
        const endpoint = await serveProbes(probes, {
          address: settings.healthAddress,
          signal: served.signal,
        });
        log.info("Serving probes at {url}healthz and {url}readyz", { url: endpoint?.url });
      }
      log.info("Starting {name} {version} with {count} controllers", {
        name: ctx.def.name,
        version: ctx.def.version,
        count: ctx.def.controllers.length,
      });
      await manager.start(stop.signal);
      return EXIT.ok;
    } finally {
      // The manager has stopped and its controllers drained: now hand the Lease over.
      electorStop.abort();
      await campaign?.catch(() => {});
      await webhooks?.close().catch(() => {});
      served.abort();
      for (const s of sigs) Deno.removeSignalListener(s, onSignal);
    }
  },
};

/**
 * Fails fast, with the API server's one-line reason, when the cluster is unreachable, a
 * controller's kind is not installed, or it may not be listed.
 */
async function preflight(
  client: Client,
  def: OperatorDefinition,
  namespaces: string[],
): Promise<void> {
  for (const c of def.controllers) {
    const where = c.resource.namespaced && namespaces.length ? namespaces : [undefined];
    for (const namespace of where) {
      try {
        await client.list(c.resource, { namespace, limit: 1 });
      } catch (err) {
        if (isNotFound(err)) continue; // e.g. a watched namespace that does not exist yet
        throw err;
      }
    }
  }
}

/** Webhooks from `admission()` are served by the operator; others only add manifests. */
function isAdmission(w: OperatorWebhook): w is Admission {
  const a = w as Partial<Admission>;
  return typeof a.mutate === "function" && typeof a.validate === "function" && !!a.resource;
}
