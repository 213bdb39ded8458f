// `run`'s flags and the settings they resolve to, with the operator's options and the
// environment: every check of a flag's value happens here, before anything connects.
//
// Where a run runs (in a cluster or not) is below.
import {
  type Flags,
  type FlagSpec,
  parseDuration,
  parseList,
  UsageError,
} from "../../util/args.ts";
import { parseBindAddress } from "../../util/http_server.ts";
import { isDnsLabel } from "../../util/names.ts";
import { DEFAULT_SHARDS, type ShardingOptions } from "../../runtime/sharding/coordinator.ts";
import { METRICS_FLAGS, type MetricsSettings, metricsSettings } from "./_metrics.ts";
import { GRACEFUL_SHUTDOWN_MS } from "../../deploy/manifests.ts";
import { parseMemoryQuantity } from "../../util/memory_limit.ts";
import type { Client } from "../../client/client.ts";
import {
  type CommandContext,
  env,
  type OperatorDefinition,
  operatorNamespace,
} from "../command/command.ts";
import type { RunningWebhooks } from "../../webhook/webhooks.ts";

/** The flags of `run`. */
export const RUN_FLAGS: readonly FlagSpec[] = [
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
    name: "memory-limit",
    type: "string",
    valueName: "QUANTITY",
    description:
      "Size the V8 heap for this memory limit (256Mi, 1Gi, bytes) instead of the container's; none turns sizing off",
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
  /**
   * The memory limit to size the V8 heap for (`--memory-limit`), in bytes: undefined reads the
   * container's (cgroup) limit, null turns sizing off.
   */
  memoryLimit?: number | null;
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
  if (elect) {
    checkLeaseTimes("Leader election", "leader-elect", {
      leaseDurationMs: lease,
      renewDeadlineMs: renew,
      retryPeriodMs: retry,
    });
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
  if (shardTimes) checkLeaseTimes("Sharding", "shard", shardTimes);
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
    memoryLimit: memoryLimit(str("memory-limit")),
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

function memoryLimit(text: string | undefined): number | null | undefined {
  if (text === undefined) return undefined;
  if (text === "none") return null;
  const bytes = parseMemoryQuantity(text);
  if (bytes === undefined) {
    throw new UsageError(
      `Flag "--memory-limit" takes a quantity such as 256Mi, 1Gi or bytes, or "none", not "${text}"`,
    );
  }
  return bytes;
}

function bindAddress(address: string, flag: string): string | undefined {
  try {
    return parseBindAddress(address) ? address : undefined;
  } catch {
    throw new UsageError(`Flag "--${flag}" takes HOST:PORT, :PORT or 0, not "${address}"`);
  }
}

/** Lease timings: how long others wait, how long the holder retries, how often it tries. */
interface LeaseTimes {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** client-go's rule for a Lease's timings, for leader election and sharding alike. */
function checkLeaseTimes(what: string, prefix: string, t: LeaseTimes): void {
  if (
    t.leaseDurationMs > t.renewDeadlineMs && t.renewDeadlineMs > 1.2 * t.retryPeriodMs &&
    t.retryPeriodMs > 0
  ) return;
  throw new UsageError(
    `${what} needs lease duration > renew deadline > 1.2 × retry period, got ` +
      `"--${prefix}-lease-duration=${t.leaseDurationMs}ms", ` +
      `"--${prefix}-renew-deadline=${t.renewDeadlineMs}ms", ` +
      `"--${prefix}-retry-period=${t.retryPeriodMs}ms"`,
  );
}

// How `run` behaves outside a cluster (local development, tests): it must depend on nothing
// that `install` did not create. The operator's namespace (e.g. `myapp-operator-system`)
// exists only once the generated manifests are deployed, so a local run keeps its webhook
// certificate in memory and puts its Lease in a namespace that exists: `--namespace`, else
// POD_NAMESPACE, else the kubeconfig context's namespace (or `default`).
/** What of `run`'s settings a local run adjusts and describes (see `RunSettings`). */
export interface LocalRunSettings {
  /** The Lease, when electing a leader. */
  leaderElection?: { name: string; namespace: string };
  /** The webhook server's supplied certificate directory, if any. */
  webhook?: { certPath?: string };
}

/** Where and how `run` runs. */
export interface RunPlace {
  /** True outside a cluster: no `KUBERNETES_SERVICE_HOST`. */
  local: boolean;
  /** The operator's namespace for this run: its Lease and, in a cluster, its certificate Secret. */
  namespace: string;
}

/**
 * Decides where `run` runs and, outside a cluster, moves the Lease to a namespace that
 * exists unless `--leader-elect-namespace` names one.
 *
 * @param ctx The command context.
 * @param client The connected client (its context's namespace).
 * @param settings `run`'s settings; `leaderElection.namespace` is adjusted in place.
 * @returns Whether the run is local and its namespace.
 */
export function runPlace(
  ctx: Pick<CommandContext, "def" | "flags">,
  client: Pick<Client, "namespace">,
  settings: LocalRunSettings,
): RunPlace {
  const local = !env("KUBERNETES_SERVICE_HOST");
  if (!local) return { local, namespace: operatorNamespace(ctx) };
  const flag = typeof ctx.flags.namespace === "string" && ctx.flags.namespace
    ? ctx.flags.namespace
    : undefined;
  const namespace = flag ?? env("POD_NAMESPACE") ?? client.namespace;
  const le = settings.leaderElection;
  if (le && typeof ctx.flags["leader-elect-namespace"] !== "string") le.namespace = namespace;
  return { local, namespace };
}

/**
 * The one line a local run prints about what it did.
 *
 * @param place Where it runs.
 * @param settings Its settings.
 * @param webhooks Its webhooks, if it serves any.
 * @param server The API server's URL.
 * @returns The line.
 */
export function describeLocalRun(
  place: RunPlace,
  settings: LocalRunSettings,
  webhooks: RunningWebhooks | undefined,
  server: string,
): string {
  const parts = [`Running outside a cluster against ${server}`];
  if (webhooks) {
    const cert = settings.webhook?.certPath
      ? `the certificate in ${settings.webhook.certPath}`
      : "an in-memory certificate";
    parts.push(
      `webhooks served at https://127.0.0.1:${webhooks.server.port} with ${cert}, registered ` +
        "by URL until exit, when the previous registration is restored",
    );
  }
  const le = settings.leaderElection;
  parts.push(
    le
      ? `Lease "${le.namespace}/${le.name}"`
      : `namespace "${place.namespace}" (a Lease only with --leader-elect)`,
  );
  return parts.join("; ");
}
