/**
 * `run` (the default command): connects, checks that every controller's kind is served and
 * readable, then runs the controllers in a manager until SIGINT or SIGTERM, and stops
 * gracefully (in-flight reconciles finish; exit code 0). A second signal exits at once with
 * code 1. With leader election, controllers run only while this replica holds the Lease;
 * losing it stops the manager and exits 1 so that the pod restarts as a standby.
 *
 * Watch scope: `--watch-namespace a,b`, else the `WATCH_NAMESPACE` environment variable, else
 * all namespaces. `POD_NAMESPACE` (set by the generated Deployment) is the operator's own
 * namespace — where its Lease lives — and does not limit what it watches; to watch only the
 * operator's namespace, as the seed did, pass `--watch-namespace=$(POD_NAMESPACE)`.
 *
 * @module
 */
import { isNotFound } from "./api_error.ts";
import { EXIT, type Flags, type FlagSpec, parseList, UsageError } from "./_cli_args.ts";
import { operatorMetrics } from "./_cli_metrics.ts";
import { parseBindAddress } from "./_http_server.ts";
import {
  type Command,
  type CommandContext,
  connect,
  env,
  type OperatorDefinition,
  operatorNamespace,
} from "./_cli_command.ts";
import type { Client } from "./client.ts";
import { leaderElector } from "./leader_election.ts";
import { createManager, type LeaderElectionContext } from "./manager.ts";
import { getLogger } from "./log.ts";
import { serveMetrics } from "./metrics.ts";

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
  /** The Lease to hold, or undefined without leader election. */
  leaderElection?: { name: string; namespace: string };
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
 * @throws {UsageError} For a malformed address or port.
 */
export function runSettings(def: OperatorDefinition, flags: Flags): RunSettings {
  const str = (name: string) => typeof flags[name] === "string" ? flags[name] as string : undefined;
  const elect = typeof flags["leader-elect"] === "boolean"
    ? flags["leader-elect"]
    : def.leaderElection.enabled;
  const port = Number(str("webhook-port") ?? "9443");
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`Flag "--webhook-port" takes a port number, not "${str("webhook-port")}"`);
  }
  return {
    watchNamespaces: parseList(str("watch-namespace") ?? env("WATCH_NAMESPACE")),
    leaderElection: elect
      ? {
        name: def.leaderElection.leaseName,
        namespace: str("leader-elect-namespace") ?? def.leaderElection.namespace ??
          operatorNamespace({ def, flags }),
      }
      : undefined,
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
<name>-system. It watches --watch-namespace, else WATCH_NAMESPACE, else all namespaces;
POD_NAMESPACE does not limit the watch (pass --watch-namespace=$(POD_NAMESPACE) for that).`,
  flags: FLAGS,
  async run(ctx: CommandContext): Promise<number> {
    const settings = runSettings(ctx.def, ctx.flags);
    const metrics = operatorMetrics();
    using client = await connect(ctx, { onRequest: metrics.onRequest });
    await preflight(client, ctx.def, settings.watchNamespaces);

    const stop = new AbortController();
    let signals = 0;
    const onSignal = () => {
      if (++signals > 1) {
        ctx.err(`${ctx.def.name}: Second signal received; exiting without waiting`);
        Deno.exit(EXIT.failure);
      }
      log.info("Received a termination signal; shutting down");
      stop.abort();
    };
    const sigs: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
    for (const s of sigs) Deno.addSignalListener(s, onSignal);

    let elected: Promise<unknown> | undefined;
    const le = settings.leaderElection;
    const manager = createManager({
      client,
      controllers: ctx.def.controllers,
      namespaces: settings.watchNamespaces.length ? settings.watchNamespaces : undefined,
      metrics: metrics.manager,
      leaderElection: le
        ? (lc: LeaderElectionContext) => {
          const elector = leaderElector({
            client: lc.client,
            name: le.name,
            namespace: le.namespace,
            metrics: metrics.leaderElection(le.name),
            onStoppedLeading: (reason) => {
              if (reason === "lost") {
                lc.lost(new Error(`Lost the Lease "${le.namespace}/${le.name}"`));
              }
            },
          });
          elected = elector.run(lc.signal);
          return elector.elected;
        }
        : undefined,
    });
    const served = new AbortController();
    try {
      if (settings.metricsAddress) {
        const endpoint = await serveMetrics(metrics.registry, {
          address: settings.metricsAddress,
          signal: served.signal,
        });
        log.info("Serving metrics at {url}metrics", { url: endpoint?.url });
      }
      log.info("Starting {name} {version} with {count} controllers", {
        name: ctx.def.name,
        version: ctx.def.version,
        count: ctx.def.controllers.length,
      });
      await manager.start(stop.signal);
      // The elector releases the Lease after the manager stopped; let that write finish.
      await elected;
      return EXIT.ok;
    } finally {
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
