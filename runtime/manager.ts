/**
 * The {@linkcode Manager}, as controller-runtime's `manager`: it owns the shared informers and
 * client and runs every controller and every other {@linkcode Runnable} (probe, metrics and
 * webhook servers, caches, leader election), started group by group and stopped in reverse,
 * the first failure turned into an orderly stop. With leader election, one replica holds a
 * Lease ({@linkcode LeaderElector}) and the others wait with warm caches; losing it stops the
 * manager at once. {@linkcode HealthChecks} and
 * {@linkcode serveProbes} answer the kubelet's `/healthz` and `/readyz`.
 *
 * The manager exposes hooks (metrics, probes) instead of importing them. Sharding among
 * replicas instead of electing a leader is in `@kubeno/kubeno/runtime/unstable-sharding`.
 *
 * @example A manager, and readiness that waits for a check
 * ```ts
 * import { createManager, HealthChecks } from "./manager.ts";
 * import { reconcile } from "./controller.ts";
 * import { ConfigMap } from "../core.ts";
 *
 * const manager = createManager({
 *   controllers: [reconcile(ConfigMap, { reconcile() {} })],
 *   namespaces: ["default"],
 * });
 * if (manager.ready() || manager.controllers.length !== 1) throw new Error();
 *
 * let synced = false;
 * const checks = new HealthChecks().addReadyz("caches", () => {
 *   if (!synced) throw new Error("Caches not synced");
 * });
 * if ((await checks.handle(new Request("http://x/readyz"))).status !== 500) throw new Error();
 * synced = true;
 * if ((await checks.handle(new Request("http://x/readyz"))).status !== 200) throw new Error();
 * ```
 *
 * @module
 */
export {
  createManager,
  type InformerStatus,
  type LeaderElectionContext,
  LeadershipLostError,
  Manager,
  type ManagerHealth,
  type ManagerLeaderElection,
  type ManagerOptions,
  type ManagerStartupContext,
  type MissingKind,
} from "../src/runtime/manager/manager.ts";
export type { Runnable, RunnableContext, RunnableGroup } from "../src/runtime/manager/runnable.ts";
export { ClusterScope, type ClusterScopeOptions } from "../src/runtime/manager/cluster_scope.ts";
export type { MemberClusters, MemberHost } from "../src/runtime/manager/members.ts";
export {
  type LeaderElectionEnd,
  LeaderElectionError,
  type LeaderElectionMetrics,
  LeaderElector,
  leaderElector,
  type LeaderElectorOptions,
  type LeaseClient,
} from "../src/runtime/manager/leader_election.ts";
export {
  type CheckResult,
  type HealthCheck,
  HealthCheckError,
  HealthChecks,
  type HttpEndpoint,
  informersSynced,
  type ProbedInformer,
  type ProbeKind,
  serveProbes,
  type ServeProbesOptions,
  watchesNotStalled,
  type WatchesNotStalledOptions,
} from "../src/runtime/manager/health.ts";
