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
 * @module
 */
import type { ControllerMetricsHooks } from "../runtime/controller/metrics_hooks.ts";
import type { Registry } from "./registry.ts";

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
  return {
    hooks: (cluster) => ({
      reconcile(sample) {
        total.inc({ cluster, controller: sample.controller, result: sample.result });
        if (sample.result === "error" || sample.result === "terminal") {
          errors.inc({ cluster, controller: sample.controller });
        }
      },
      queued(controller) {
        adds.inc({ cluster, controller });
      },
    }),
    onCluster({ type, cluster }) {
      if (type === "engaged") engaged.set({ cluster }, 1);
      else engaged.remove({ cluster });
    },
  };
}
