// The operator's Prometheus registry, fed from the manager's, the client's and leader
// election's hooks with controller-runtime's metric names (see metrics_controller.ts), and
// `run`'s /metrics endpoint as kubebuilder v4 scaffolds it: HTTPS behind the API server's
// authentication and authorization by default (`--metrics-secure`), plain HTTP by flag.
import type { Client, RequestMetric } from "../../client/client.ts";
import type { ControllerMetricsHooks } from "../../runtime/controller/metrics_hooks.ts";
import type { LeaderElectionMetrics } from "../../runtime/manager/leader_election.ts";
import { Registry, serveMetrics } from "../../metrics/registry.ts";
import {
  controllerMetrics,
  leaderElectionMetrics,
  restClientMetrics,
  workqueueMetrics,
} from "../../metrics/controller_metrics.ts";
import { registerProcessMetrics } from "../../metrics/process_metrics.ts";
import { type ClusterMetrics, clusterMetrics } from "../../metrics/cluster_metrics.ts";
import { shardingMetrics, type ShardSample } from "../../metrics/sharding_metrics.ts";
import type { ShardingMetrics } from "../../runtime/sharding/coordinator.ts";
import type { Informer } from "../../runtime/cache/informer.ts";
import { type Flags, type FlagSpec, UsageError } from "../../util/args.ts";
import { type HttpEndpoint, parseBindAddress } from "../../util/http_server.ts";

/** The hooks `run` passes to the client, the manager and the leader elector. */
export interface OperatorMetrics {
  /** What `/metrics` serves. */
  registry: Registry;
  /** The client's `onRequest`. */
  onRequest: (metric: RequestMetric) => void;
  /** The manager's `metrics`; none for a fleet, whose controllers' are per cluster. */
  manager?: ControllerMetricsHooks;
  /** A fleet's per-cluster families (`kubeno_cluster_*` and the controllers' own). */
  clusters?: ClusterMetrics;
  /**
   * The leader elector's `metrics`.
   * @param lease The Lease's name.
   * @returns The hooks.
   */
  leaderElection(lease: string): LeaderElectionMetrics;
  /** The webhook server's `onRequest`: controller-runtime's webhook latency and requests. */
  webhook: (sample: { path: string; code: number; seconds: number }) => void;
  /**
   * Samples the size of every cache at each scrape (`kubeno_cache_objects`).
   *
   * @param informers The manager's informers, read at each scrape.
   */
  caches(informers: () => Iterable<Informer<any>> | undefined): void;
  /** The shard coordinator's hooks, when the operator is sharded. */
  sharding?: ShardingMetrics;
  /**
   * Feeds the per-shard families from the manager once it runs: `shardOf` maps each
   * reconcile to its shard, `stats` is sampled at every scrape.
   *
   * @param source The sharded manager.
   */
  shards(source: {
    shardOf(controller: string, key: string): number | undefined;
    shardStats(): readonly ShardSample[];
  }): void;
}

/**
 * Creates the registry with process metrics and the adapters that fill it.
 *
 * @param options `shards`: the number of virtual shards of a sharded operator, which adds the
 * sharding families. `fleet`: the controllers run on member clusters, so their families are
 * defined per cluster, with a `cluster` label (`clusterMetrics`), instead of for the manager;
 * defining both would clash.
 * @returns The registry and hooks.
 */
export function operatorMetrics(
  options: { shards?: number; fleet?: boolean } = {},
): OperatorMetrics {
  const registry = new Registry();
  registerProcessMetrics(registry);
  const sharded = options.shards ? shardingMetrics(registry, options.shards) : undefined;
  let shardOf: ((controller: string, key: string) => number | undefined) | undefined;
  const onReconcile = (controller: string, key: string, result: string) => {
    const shard = shardOf?.(controller, key);
    if (shard !== undefined) sharded?.reconciled(controller, shard, result);
  };
  return {
    registry,
    onRequest: restClientMetrics(registry),
    ...(options.fleet
      ? { clusters: clusterMetrics(registry) }
      : { manager: managerHooks(registry, onReconcile) }),
    leaderElection: (lease) => leaderElectionMetrics(registry, lease),
    webhook: webhookMetrics(registry),
    caches(informers) {
      const objects = registry.gauge({
        name: "kubeno_cache_objects",
        help: "Objects held in the informer caches, by kind (summed over namespaces)",
        labelNames: ["group", "version", "kind"],
      });
      registry.onCollect(() => {
        const sums = new Map<
          string,
          { labels: { group: string; version: string; kind: string }; n: number }
        >();
        for (const inf of informers() ?? []) {
          const [group, version] = inf.resource.apiVersion.includes("/")
            ? inf.resource.apiVersion.split("/")
            : ["", inf.resource.apiVersion];
          const key = `${inf.resource.apiVersion}/${inf.resource.kind}`;
          let s = sums.get(key);
          if (!s) sums.set(key, s = { labels: { group, version, kind: inf.resource.kind }, n: 0 });
          s.n += inf.store.size;
        }
        for (const s of sums.values()) objects.set(s.labels, s.n);
      });
    },
    ...(sharded ? { sharding: sharded.hooks } : {}),
    shards(source) {
      shardOf = (controller, key) => source.shardOf(controller, key);
      sharded?.collect(() => source.shardStats());
    },
  };
}

/** The manager's controller families with controller-runtime's names, and kubeno's own. */
function managerHooks(
  registry: Registry,
  onReconcile: (controller: string, key: string, result: string) => void,
): ControllerMetricsHooks {
  const per = new Map<string, ReturnType<typeof controllerMetrics>>();
  const active = new Map<string, number>();
  const of = (controller: string) => {
    let m = per.get(controller);
    if (!m) per.set(controller, m = controllerMetrics(registry, controller));
    return m;
  };
  const own = ownWriteMetrics(registry);
  const runs = registry.counter({
    name: "kubeno_controller_background_runs_total",
    help:
      "Runs of a controller's timers and daemons by result: success, error (a daemon then restarts), skipped (a timer tick while its key was being reconciled)",
    labelNames: ["controller", "kind", "name", "result"],
  });
  const daemons = registry.gauge({
    name: "kubeno_controller_daemons_running",
    help: "Daemons running now, one per object, by controller and daemon",
    labelNames: ["controller", "name"],
  });
  const kinds = registry.gauge({
    name: "kubeno_controller_kind_served",
    help:
      "Whether the API server serves an optional kind a controller caches (1), or the controller runs without it (0)",
    labelNames: ["controller", "group", "version", "kind"],
  });
  return {
    ...own,
    reconcile(s) {
      const result = s.result === "terminal" ? "error" : s.result;
      of(s.controller).reconciled(result, s.seconds, s.result === "terminal");
      onReconcile(s.controller, s.key, result);
    },
    timeout: (controller) => of(controller).timedOut(),
    activeWorkers(controller, n) {
      const delta = n - (active.get(controller) ?? 0);
      active.set(controller, n);
      for (let i = 0; i < Math.abs(delta); i++) of(controller).activeWorkers(delta > 0 ? 1 : -1);
    },
    workqueue: (controller) => workqueueMetrics(registry, controller),
    background: (b) =>
      runs.inc({ controller: b.controller, kind: b.kind, name: b.name, result: b.result }),
    daemonsRunning: (controller, name, delta) => daemons.inc({ controller, name }, delta),
    kindServed: (controller, res, served) =>
      kinds.set(
        { controller, group: res.group, version: res.version, kind: res.kind },
        served ? 1 : 0,
      ),
  };
}

/** controller-runtime's webhook families, by the webhook's path. */
function webhookMetrics(
  registry: Registry,
): (sample: { path: string; code: number; seconds: number }) => void {
  const latency = registry.histogram({
    name: "controller_runtime_webhook_latency_seconds",
    help: "Histogram of the latency of processing admission requests",
    labelNames: ["webhook"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });
  const requests = registry.counter({
    name: "controller_runtime_webhook_requests_total",
    help: "Total number of admission requests by HTTP status code",
    labelNames: ["webhook", "code"],
  });
  return ({ path, code, seconds }) => {
    latency.observe({ webhook: path }, seconds);
    requests.inc({ webhook: path, code: String(code) });
  };
}

/**
 * kubeno's own controller families: why keys were queued, own-write echoes that queued
 * nothing, and waits for the cache to show a controller's own writes.
 */
function ownWriteMetrics(
  registry: Registry,
): Pick<ControllerMetricsHooks, "queued" | "echo" | "cacheLag"> {
  const adds = registry.counter({
    name: "kubeno_controller_queue_adds_total",
    help: "Keys put in a controller's work queue, by cause",
    labelNames: ["controller", "cause"],
  });
  const echoes = registry.counter({
    name: "kubeno_controller_own_write_echoes_total",
    help: "Watch events that were the echo of the controller's own write and queued nothing",
    labelNames: ["controller"],
  });
  const lag = registry.counter({
    name: "kubeno_controller_cache_lag_total",
    help:
      "Reconciles that waited for the cache to show the controller's own writes (deferred), or ran without one it did not show in time (expired)",
    labelNames: ["controller", "outcome"],
  });
  return {
    queued: (controller, cause) => adds.inc({ controller, cause }),
    echo: (controller) => echoes.inc({ controller }),
    cacheLag: (controller, outcome) => lag.inc({ controller, outcome }),
  };
}

/** The default secure and plain ports of `/metrics`. */
export const METRICS_PORTS = { secure: 8443, plain: 8080 } as const;

/** `run`'s metrics flags. */
export const METRICS_FLAGS: readonly FlagSpec[] = [
  {
    name: "metrics-bind-address",
    type: "string",
    valueName: "ADDR",
    description:
      `Address of /metrics (default: :${METRICS_PORTS.secure}, or :${METRICS_PORTS.plain} with --metrics-secure=false); 0 disables`,
  },
  {
    name: "metrics-secure",
    type: "boolean",
    description:
      "Serve /metrics over HTTPS to callers whose token may get /metrics (TokenReview and SubjectAccessReview); --metrics-secure=false serves plain HTTP (default: true)",
  },
  {
    name: "metrics-cert-path",
    type: "string",
    valueName: "DIR",
    description: "Directory with tls.crt and tls.key for /metrics (default: self-signed)",
  },
];

/** Where and how `/metrics` is served. */
export interface MetricsSettings {
  /** The bind address. */
  address: string;
  /** HTTPS with authentication and authorization. */
  secure: boolean;
  /** Supplied certificate directory. */
  certPath?: string;
}

/**
 * Resolves the metrics flags.
 *
 * @param flags The parsed flags.
 * @returns The settings, or undefined when disabled.
 * @throws {UsageError} For a malformed address, or a certificate with plain HTTP.
 */
export function metricsSettings(flags: Flags): MetricsSettings | undefined {
  const secure = flags["metrics-secure"] !== false;
  const certPath = typeof flags["metrics-cert-path"] === "string"
    ? flags["metrics-cert-path"]
    : undefined;
  if (!secure && certPath !== undefined) {
    throw new UsageError(
      'Flags "--metrics-cert-path" and "--metrics-secure=false" conflict: a certificate is only used over HTTPS; drop one of them',
    );
  }
  const address = typeof flags["metrics-bind-address"] === "string"
    ? flags["metrics-bind-address"]
    : `:${secure ? METRICS_PORTS.secure : METRICS_PORTS.plain}`;
  try {
    if (!parseBindAddress(address)) return undefined;
  } catch {
    throw new UsageError(
      `Flag "--metrics-bind-address" takes HOST:PORT, :PORT or 0, not "${address}"`,
    );
  }
  return { address, secure, certPath };
}

/**
 * Serves `/metrics` as the settings say.
 *
 * @param registry The operator's metrics.
 * @param settings Address and mode.
 * @param client Sends the token and access reviews in secure mode.
 * @param signal Stops the server.
 * @returns The endpoint.
 */
export function serveOperatorMetrics(
  registry: Registry,
  settings: MetricsSettings,
  client: Client,
  signal: AbortSignal,
): Promise<HttpEndpoint | undefined> {
  return serveMetrics(registry, {
    address: settings.address,
    signal,
    secure: settings.secure ? { client, certDir: settings.certPath } : undefined,
  });
}
