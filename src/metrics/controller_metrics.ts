/**
 * controller-runtime's metric families, with the same names, labels and buckets, so that
 * dashboards and alerts written for Go operators work unchanged; and adapters that feed them
 * from kubeno's hooks: controllers, work queues, the client and leader election.
 *
 * @module
 */

import type { RequestMetric } from "../client/client.ts";
import type { LeaderElectionMetrics } from "../runtime/manager/leader_election.ts";
import type { Registry } from "./registry.ts";
import type { WorkQueueMetrics } from "../runtime/queue/workqueue.ts";

/** The `result` label of `controller_runtime_reconcile_total`. */
export type ReconcileResultLabel = "success" | "error" | "requeue" | "requeue_after";

/** What a controller reports; see {@linkcode controllerMetrics}. */
export interface ControllerMetrics {
  /**
   * One reconcile finished.
   *
   * @param result `success`, `error` (also counts `_errors_total`), `requeue` or
   * `requeue_after`.
   * @param seconds How long it took (`controller_runtime_reconcile_time_seconds`).
   * @param terminal For an error that is not retried (`TerminalError`): also counts
   * `controller_runtime_terminal_reconcile_errors_total`.
   */
  reconciled(result: ReconcileResultLabel, seconds: number, terminal?: boolean): void;
  /** A reconcile threw instead of returning (`controller_runtime_reconcile_panics_total`). */
  panicked(): void;
  /**
   * A reconcile ran past the controller's `run.timeoutMs` and was cut
   * (`controller_runtime_reconcile_timeouts_total`); it is also reported to `reconciled` as
   * an `error`.
   */
  timedOut(): void;
  /** Sets `controller_runtime_max_concurrent_reconciles`. */
  maxConcurrentReconciles(n: number): void;
  /** A worker started (+1) or finished (-1) a reconcile: `controller_runtime_active_workers`. */
  activeWorkers(delta: 1 | -1): void;
}

const RECONCILE_BUCKETS = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.15,
  0.2,
  0.25,
  0.3,
  0.35,
  0.4,
  0.45,
  0.5,
  0.6,
  0.7,
  0.8,
  0.9,
  1.0,
  1.25,
  1.5,
  1.75,
  2.0,
  2.5,
  3.0,
  3.5,
  4.0,
  4.5,
  5,
  6,
  7,
  8,
  9,
  10,
  15,
  20,
  25,
  30,
  40,
  50,
  60,
];

/** The label names and values of one controller, `cluster` first when it is a fleet's. */
function qualified(controller: string, cluster: string | undefined, name = false): {
  ln: (...more: string[]) => string[];
  c: Record<string, string>;
} {
  const base = [
    ...(cluster === undefined ? [] : ["cluster"]),
    ...(name ? ["name"] : []),
    "controller",
  ];
  return {
    ln: (...more) => [...base, ...more],
    c: {
      ...(cluster === undefined ? {} : { cluster }),
      ...(name ? { name: controller } : {}),
      controller,
    },
  };
}

/**
 * client_golang's `ExponentialBuckets(start, factor, count)`, computed the same way so the
 * `le` labels are the same strings (`9.999999999999999e-06` included).
 */
function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  for (let i = 0, b = start; i < count; i++, b *= factor) out.push(b);
  return out;
}
const WORKQUEUE_BUCKETS = exponentialBuckets(10e-9, 10, 12);

/**
 * Defines controller-runtime's controller metrics in `registry` (once) and returns the hooks
 * of one controller. Every `result` series starts at 0, as controller-runtime does, so rates
 * are defined before the first reconcile.
 *
 * @param registry Where the families live.
 * @param controller The `controller` label: the controller's name.
 * @param options `cluster`: a fleet's cluster; every family then has a `cluster` label
 * first (a registry holds either cluster-labelled families or plain ones, not both).
 * @returns The hooks the controller calls.
 *
 * @example Counting a reconcile
 * ```ts
 * import { Registry } from "./registry.ts";
 * import { controllerMetrics } from "./controller_metrics.ts";
 *
 * const registry = new Registry();
 * const m = controllerMetrics(registry, "myapp");
 * m.reconciled("success", 0.012);
 * const text = await registry.metrics();
 * if (!text.includes('controller_runtime_reconcile_total{controller="myapp",result="success"} 1')) {
 *   throw new Error(text);
 * }
 * ```
 */
export function controllerMetrics(
  registry: Registry,
  controller: string,
  options: { cluster?: string } = {},
): ControllerMetrics {
  const { ln, c } = qualified(controller, options.cluster);
  const total = registry.counter({
    name: "controller_runtime_reconcile_total",
    help: "Total number of reconciliations per controller",
    labelNames: ln("result"),
  });
  const errors = registry.counter({
    name: "controller_runtime_reconcile_errors_total",
    help: "Total number of reconciliation errors per controller",
    labelNames: ln(),
  });
  const terminal = registry.counter({
    name: "controller_runtime_terminal_reconcile_errors_total",
    help: "Total number of terminal reconciliation errors per controller",
    labelNames: ln(),
  });
  const panics = registry.counter({
    name: "controller_runtime_reconcile_panics_total",
    help: "Total number of reconciliation panics per controller",
    labelNames: ln(),
  });
  const timeouts = registry.counter({
    name: "controller_runtime_reconcile_timeouts_total",
    help: "Total number of reconciliation timeouts per controller",
    labelNames: ln(),
  });
  const time = registry.histogram({
    name: "controller_runtime_reconcile_time_seconds",
    help: "Length of time per reconciliation per controller",
    labelNames: ln(),
    buckets: RECONCILE_BUCKETS,
  });
  const workers = registry.gauge({
    name: "controller_runtime_max_concurrent_reconciles",
    help: "Maximum number of concurrent reconciles per controller",
    labelNames: ln(),
  });
  const active = registry.gauge({
    name: "controller_runtime_active_workers",
    help: "Number of currently used workers per controller",
    labelNames: ln(),
  });
  for (const result of ["success", "error", "requeue", "requeue_after"] as const) {
    total.inc({ ...c, result }, 0);
  }
  errors.inc(c, 0);
  terminal.inc(c, 0);
  panics.inc(c, 0);
  timeouts.inc(c, 0);
  active.set(c, 0);
  return {
    reconciled(result, seconds, isTerminal = false) {
      total.inc({ ...c, result });
      time.observe(c, seconds);
      if (result === "error") errors.inc(c);
      if (isTerminal) terminal.inc(c);
    },
    panicked: () => panics.inc(c),
    timedOut: () => timeouts.inc(c),
    maxConcurrentReconciles: (n) => workers.set(c, n),
    activeWorkers: (delta) => active.inc(c, delta),
  };
}

/**
 * Defines controller-runtime's `workqueue_*` metrics in `registry` (once) and returns the
 * hooks for one controller's {@linkcode WorkQueue}; as in controller-runtime, both the
 * `name` and `controller` labels are the controller's name, and `workqueue_depth` alone
 * also has a `priority` label, as its priority queue reports it: a series per priority for
 * the first 25 distinct ones, any later ones summed under `exceeded_cardinality_limit`.
 *
 * @typeParam K The queue's key type.
 * @param registry Where the families live.
 * @param controller The controller's name.
 * @param options `cluster`: a fleet's cluster, as for {@linkcode controllerMetrics}.
 * @returns Hooks to pass as `new WorkQueue({ metrics })`.
 *
 * @example Feeding a work queue's metrics
 * ```ts
 * import { Registry } from "./registry.ts";
 * import { workqueueMetrics } from "./controller_metrics.ts";
 * import { WorkQueue } from "../runtime/queue/workqueue.ts";
 *
 * const registry = new Registry();
 * const queue = new WorkQueue<string>({ name: "myapp", metrics: workqueueMetrics(registry, "myapp") });
 * queue.add("default/a");
 * const text = await registry.metrics();
 * if (!text.includes('workqueue_depth{name="myapp",controller="myapp",priority="0"} 1')) {
 *   throw new Error(text);
 * }
 * await queue.shutDownWithDrain();
 * ```
 */
export function workqueueMetrics<K = string>(
  registry: Registry,
  controller: string,
  options: { cluster?: string } = {},
): WorkQueueMetrics<K> {
  const { ln, c: l } = qualified(controller, options.cluster, true);
  const labelNames = ln();
  const depth = registry.gauge({
    name: "workqueue_depth",
    help: "Current depth of workqueue by workqueue and priority",
    labelNames: ln("priority"),
  });
  // As controller-runtime's depthWithPriorityMetric: a label per priority, up to 25, so a
  // caller's many priorities cannot blow up the series. Deltas, not values, are recorded,
  // as the overflow series sums several priorities.
  const priorityLabels = new Map<number, string>();
  const depths = new Map<number, number>();
  const priorityLabel = (priority: number): string => {
    let label = priorityLabels.get(priority);
    if (label !== undefined) return label;
    if (priorityLabels.size === 25) return "exceeded_cardinality_limit";
    priorityLabels.set(priority, label = String(priority));
    return label;
  };
  const adds = registry.counter({
    name: "workqueue_adds_total",
    help: "Total number of adds handled by workqueue",
    labelNames,
  });
  const latency = registry.histogram({
    name: "workqueue_queue_duration_seconds",
    help: "How long in seconds an item stays in workqueue before being requested",
    labelNames,
    buckets: WORKQUEUE_BUCKETS,
  });
  const work = registry.histogram({
    name: "workqueue_work_duration_seconds",
    help: "How long in seconds processing an item from workqueue takes.",
    labelNames,
    buckets: WORKQUEUE_BUCKETS,
  });
  const unfinished = registry.gauge({
    name: "workqueue_unfinished_work_seconds",
    help: "How many seconds of work has been done that is in progress and hasn't been " +
      "observed by work_duration. Large values indicate stuck threads. One can deduce the " +
      "number of stuck threads by observing the rate at which this increases.",
    labelNames,
  });
  const longest = registry.gauge({
    name: "workqueue_longest_running_processor_seconds",
    help: "How many seconds has the longest running processor for workqueue been running.",
    labelNames,
  });
  const retries = registry.counter({
    name: "workqueue_retries_total",
    help: "Total number of retries handled by workqueue",
    labelNames,
  });
  depth.set({ ...l, priority: "0" }, 0);
  adds.inc(l, 0);
  retries.inc(l, 0);
  unfinished.set(l, 0);
  longest.set(l, 0);
  return {
    add: () => adds.inc(l),
    depth(n, priority = 0) {
      depth.inc({ ...l, priority: priorityLabel(priority) }, n - (depths.get(priority) ?? 0));
      if (n === 0) depths.delete(priority);
      else depths.set(priority, n);
    },
    queueDuration: (s) => latency.observe(l, s),
    workDuration: (s) => work.observe(l, s),
    retry: () => retries.inc(l),
    unfinishedWork(unfinishedSeconds, longestSeconds) {
      unfinished.set(l, unfinishedSeconds);
      longest.set(l, longestSeconds);
    },
  };
}

/**
 * Defines client-go's `rest_client_requests_total{code,method,host}` in `registry` (once)
 * and returns a callback for `createClient({ onRequest })`. A request that got no response
 * is counted with `code="<error>"`, as client-go does.
 *
 * @param registry Where the family lives.
 * @returns The `onRequest` callback.
 *
 * @example Counting requests
 * ```ts
 * import { Registry } from "./registry.ts";
 * import { restClientMetrics } from "./controller_metrics.ts";
 *
 * const registry = new Registry();
 * const onRequest = restClientMetrics(registry);
 * onRequest({ method: "GET", verb: "list", host: "127.0.0.1:6443", code: 200, durationMs: 3 });
 * const text = await registry.metrics();
 * if (!text.includes('rest_client_requests_total{code="200",method="GET",host="127.0.0.1:6443"} 1')) {
 *   throw new Error(text);
 * }
 * ```
 */
export function restClientMetrics(registry: Registry): (metric: RequestMetric) => void {
  const requests = registry.counter({
    name: "rest_client_requests_total",
    help: "Number of HTTP requests, partitioned by status code, method, and host.",
    labelNames: ["code", "method", "host"],
  });
  return (m) =>
    requests.inc({ code: m.code ? String(m.code) : "<error>", method: m.method, host: m.host });
}

/**
 * Defines `leader_election_master_status{name}` in `registry` (once) and returns hooks for
 * `leaderElector({ metrics })`: 1 while leading, 0 otherwise.
 *
 * @param registry Where the family lives.
 * @param name The Lease's name.
 * @returns The hooks.
 *
 * @example Reporting leadership
 * ```ts
 * import { Registry } from "./registry.ts";
 * import { leaderElectionMetrics } from "./controller_metrics.ts";
 *
 * const registry = new Registry();
 * leaderElectionMetrics(registry, "myapp-operator").leading(true);
 * const text = await registry.metrics();
 * if (!text.includes('leader_election_master_status{name="myapp-operator"} 1')) throw new Error(text);
 * ```
 */
export function leaderElectionMetrics(registry: Registry, name: string): LeaderElectionMetrics {
  const status = registry.gauge({
    name: "leader_election_master_status",
    help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates " +
      "backup, 1 indicates master. 'name' is the string used to identify the lease. Please " +
      "make sure to group by name.",
    labelNames: ["name"],
  });
  status.set({ name }, 0);
  return { leading: (isLeader) => status.set({ name }, isLeader ? 1 : 0) };
}
