// The operator's Prometheus registry, fed from the manager's, the client's and leader
// election's hooks with controller-runtime's metric names (see metrics_controller.ts).
import type { RequestMetric } from "../client/client.ts";
import type { ControllerMetricsHooks } from "../runtime/controller/runner.ts";
import type { LeaderElectionMetrics } from "../runtime/manager/leader_election.ts";
import { Registry } from "../metrics/registry.ts";
import {
  controllerMetrics,
  leaderElectionMetrics,
  restClientMetrics,
  workqueueMetrics,
} from "../metrics/controller_metrics.ts";
import { registerProcessMetrics } from "../metrics/process_metrics.ts";

/** The hooks `run` passes to the client, the manager and the leader elector. */
export interface OperatorMetrics {
  /** What `/metrics` serves. */
  registry: Registry;
  /** The client's `onRequest`. */
  onRequest: (metric: RequestMetric) => void;
  /** The manager's `metrics`. */
  manager: ControllerMetricsHooks;
  /**
   * The leader elector's `metrics`.
   * @param lease The Lease's name.
   * @returns The hooks.
   */
  leaderElection(lease: string): LeaderElectionMetrics;
}

/**
 * Creates the registry with process metrics and the adapters that fill it.
 *
 * @returns The registry and hooks.
 */
export function operatorMetrics(): OperatorMetrics {
  const registry = new Registry();
  registerProcessMetrics(registry);
  const per = new Map<string, ReturnType<typeof controllerMetrics>>();
  const active = new Map<string, number>();
  const of = (controller: string) => {
    let m = per.get(controller);
    if (!m) per.set(controller, m = controllerMetrics(registry, controller));
    return m;
  };
  return {
    registry,
    onRequest: restClientMetrics(registry),
    manager: {
      reconcile(s) {
        const result = s.result === "terminal" ? "error" : s.result;
        of(s.controller).reconciled(result, s.seconds, s.result === "terminal");
      },
      activeWorkers(controller, n) {
        const delta = n - (active.get(controller) ?? 0);
        active.set(controller, n);
        for (let i = 0; i < Math.abs(delta); i++) of(controller).activeWorkers(delta > 0 ? 1 : -1);
      },
      workqueue: (controller) => workqueueMetrics(registry, controller),
    },
    leaderElection: (lease) => leaderElectionMetrics(registry, lease),
  };
}
