/**
 * Prometheus metrics without a client library: a {@linkcode Registry} of counters, gauges
 * and histograms in the text exposition format, an HTTP endpoint for it, and the metric
 * families controller-runtime operators expose (`controller_runtime_*`, `workqueue_*`,
 * `rest_client_*`, `leader_election_*`, `process_*`) and a sharded operator's `kubeno_shard_*`,
 * fed through hooks so that the machinery never imports this module.
 *
 * @example Count and expose
 * ```ts
 * import { Registry } from "./metrics.ts";
 *
 * const registry = new Registry();
 * const total = registry.counter({ name: "jobs_total", help: "Jobs run", labelNames: ["result"] });
 * total.inc({ result: "ok" });
 * if (!(await registry.metrics()).includes('jobs_total{result="ok"} 1')) throw new Error();
 * ```
 *
 * @module
 */
export {
  Counter,
  Gauge,
  Histogram,
  type HistogramOptions,
  type HttpEndpoint,
  type LabelValues,
  type MetricOptions,
  METRICS_CONTENT_TYPE,
  Registry,
  serveMetrics,
  type ServeMetricsOptions,
} from "./src/metrics/registry.ts";
export {
  type ControllerMetrics,
  controllerMetrics,
  leaderElectionMetrics,
  type ReconcileResultLabel,
  restClientMetrics,
  workqueueMetrics,
} from "./src/metrics/controller_metrics.ts";
export { registerProcessMetrics } from "./src/metrics/process_metrics.ts";
export { type ClusterMetrics, clusterMetrics } from "./src/metrics/cluster_metrics.ts";
export {
  shardingMetrics,
  type ShardingMetricsAdapter,
  type ShardSample,
} from "./src/metrics/sharding_metrics.ts";
