/**
 * The metrics of a fleet (see `createFleet`), per engaged cluster: reconciles with a
 * `cluster` label beside controller-runtime's `controller` and `result`, the depth of each
 * cluster's work queues, and which clusters are engaged.
 *
 * | family | type | labels |
 * | --- | --- | --- |
 * | `kubeno_cluster_reconcile_total` | counter | `cluster`, `controller`, `result` |
 * | `kubeno_cluster_reconcile_errors_total` | counter | `cluster`, `controller` |
 * | `kubeno_cluster_queue_adds_total` | counter | `cluster`, `controller` |
 * | `kubeno_cluster_engaged` | gauge (1 per engaged cluster) | `cluster` |
 *
 * And the controllers' own families, each with a `cluster` label first: controller-runtime's
 * `controller_runtime_reconcile_*`, `controller_runtime_active_workers`, `workqueue_*` (see
 * `controllerMetrics` and `workqueueMetrics`) and `kubeno_controller_queue_adds_total
 * {cluster,controller,cause}`. A disengaged cluster's series are all removed (counters too, as
 * client_golang's `DeletePartialMatch`; an engaged-again cluster starts from 0, a counter
 * reset to `rate()`), so a fleet's series follow its clusters instead of growing forever.
 *
 * @module
 */
import type { ControllerMetricsHooks } from "../runtime/controller/metrics_hooks.ts";
import type { Registry } from "./registry.ts";
import { controllerMetrics, workqueueMetrics } from "./controller_metrics.ts";

/** What {@linkcode clusterMetrics} returns. */
export interface ClusterMetrics {
  /**
   * The hooks of one cluster's controllers, for the fleet's `metrics` option.
   *
   * @param cluster The cluster's name.
   * @returns Its controllers' hooks.
   */
  hooks(cluster: string): ControllerMetricsHooks;
  /**
   * Marks a cluster engaged or not, for the fleet's `onCluster` option.
   *
   * @param event What happened to which cluster.
   */
  onCluster(event: { type: "engaged" | "disengaged"; cluster: string }): void;
}

/**
 * Defines the fleet's families in `registry` and returns the adapters that fill them.
 *
 * @param registry Where the families live.
 * @returns Per-cluster controller hooks and the engage/disengage callback.
 *
 * @example A reconcile on cluster "eu-1" is counted with its cluster
 * ```ts
 * import { Registry } from "./registry.ts";
 * import { clusterMetrics } from "./cluster_metrics.ts";
 * const registry = new Registry();
 * const m = clusterMetrics(registry);
 * m.onCluster({ type: "engaged", cluster: "eu-1" });
 * m.hooks("eu-1").reconcile?.({ controller: "push", key: "a", result: "success", seconds: 0.1 });
 * const text = await registry.metrics();
 * if (!text.includes('kubeno_cluster_reconcile_total{cluster="eu-1",controller="push",result="success"} 1')) {
 *   throw new Error(text);
 * }
 * ```
 */
export function clusterMetrics(registry: Registry): ClusterMetrics {
  const total = registry.counter<"cluster" | "controller" | "result">({
    name: "kubeno_cluster_reconcile_total",
    help: "Total number of reconciliations per cluster and controller",
    labelNames: ["cluster", "controller", "result"],
  });
  const errors = registry.counter<"cluster" | "controller">({
    name: "kubeno_cluster_reconcile_errors_total",
    help: "Total number of reconciliation errors per cluster and controller",
    labelNames: ["cluster", "controller"],
  });
  const adds = registry.counter<"cluster" | "controller">({
    name: "kubeno_cluster_queue_adds_total",
    help: "Keys put in the work queue per cluster and controller",
    labelNames: ["cluster", "controller"],
  });
  const engaged = registry.gauge<"cluster">({
    name: "kubeno_cluster_engaged",
    help: "1 per cluster this replica has engaged",
    labelNames: ["cluster"],
  });
  const causes = registry.counter<"cluster" | "controller" | "cause">({
    name: "kubeno_controller_queue_adds_total",
    help: "Keys put in a controller's work queue, by cause",
    labelNames: ["cluster", "controller", "cause"],
  });
  return {
    hooks(cluster) {
      const per = new Map<string, ReturnType<typeof controllerMetrics>>();
      const active = new Map<string, number>();
      const of = (controller: string) => {
        let m = per.get(controller);
        if (!m) per.set(controller, m = controllerMetrics(registry, controller, { cluster }));
        return m;
      };
      return {
        reconcile(sample) {
          total.inc({ cluster, controller: sample.controller, result: sample.result });
          const terminal = sample.result === "terminal";
          if (sample.result === "error" || terminal) {
            errors.inc({ cluster, controller: sample.controller });
          }
          of(sample.controller).reconciled(
            sample.result === "terminal" ? "error" : sample.result,
            sample.seconds,
            terminal,
          );
        },
        queued(controller, cause) {
          adds.inc({ cluster, controller });
          causes.inc({ cluster, controller, cause });
        },
        timeout: (controller) => of(controller).timedOut(),
        activeWorkers(controller, n) {
          const delta = n - (active.get(controller) ?? 0);
          active.set(controller, n);
          for (let i = 0; i < Math.abs(delta); i++) {
            of(controller).activeWorkers(delta > 0 ? 1 : -1);
          }
        },
        workqueue: (controller) => workqueueMetrics(registry, controller, { cluster }),
      };
    },
    onCluster({ type, cluster }) {
      if (type === "engaged") engaged.set({ cluster }, 1);
      else registry.removeSeries({ cluster });
    },
  };
}
