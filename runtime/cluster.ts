/**
 * Many clusters: {@linkcode createFleet} runs the same controllers on every cluster a
 * {@linkcode ClusterProvider} engages — {@linkcode fixedClusters} (kubeconfig files) or
 * {@linkcode kubeconfigSecrets} (labelled Secrets on the hub, multicluster-runtime's
 * convention) — each with its own client, informers and queues; `ctx.cluster` names the
 * cluster and {@linkcode hubOf}`(ctx)` reads the hub.
 *
 * @example Controllers over the clusters whose kubeconfigs are Secrets in "fleet-system"
 * ```ts
 * import { createFleet, kubeconfigSecrets } from "./cluster.ts";
 * import { reconcile } from "./controller.ts";
 * import { ConfigMap } from "../core.ts";
 *
 * const fleet = createFleet({
 *   controllers: [reconcile(ConfigMap, { reconcile: (_cm, ctx) => ctx.log.info(ctx.cluster ?? "") })],
 *   clusters: kubeconfigSecrets({ namespace: "fleet-system" }),
 * });
 * if (fleet.clusters().length !== 0) throw new Error();
 * ```
 *
 * @module
 */
export {
  type ClusterStatus,
  createFleet,
  Fleet,
  type FleetOptions,
  type FleetSharding,
} from "../src/runtime/cluster/fleet.ts";
export type { ClientOptions } from "../src/client/client.ts";
export {
  type ClusterConfig,
  type ClusterEvents,
  type ClusterProvider,
  type FixedCluster,
  fixedClusters,
  type HubRule,
  KUBECONFIG_SECRET_LABEL,
  kubeconfigSecrets,
  type KubeconfigSecretsOptions,
} from "../src/runtime/cluster/provider.ts";
export { type HubAccess, hubOf } from "../src/runtime/cluster/hub.ts";
