/**
 * Many clusters under one manager: {@linkcode createFleet} is the manager's `fleet` option —
 * the manager's controllers on every cluster a {@linkcode ClusterProvider} engages,
 * {@linkcode fixedClusters} (kubeconfig files) or {@linkcode kubeconfigSecrets} (labelled
 * Secrets on the hub, multicluster-runtime's convention) — each with its own client,
 * informers and queues run in the manager's groups; `ctx.cluster` names the cluster and
 * {@linkcode hubOf}`(ctx)` reads the hub.
 *
 * @example Controllers over the clusters whose kubeconfigs are Secrets in "fleet-system"
 * ```ts
 * import { createFleet, kubeconfigSecrets } from "./cluster.ts";
 * import { reconcile } from "./controller.ts";
 * import { createManager } from "./manager.ts";
 * import { ConfigMap } from "../core.ts";
 * import type { Client } from "../client.ts";
 *
 * const fleet = createFleet({ clusters: kubeconfigSecrets({ namespace: "fleet-system" }) });
 * const manager = createManager({
 *   client: {} as Client, // the hub's: createClient()
 *   controllers: [reconcile(ConfigMap, { reconcile: (_cm, ctx) => ctx.log.info(ctx.cluster ?? "") })],
 *   fleet,
 * });
 * if (fleet.clusters().length !== 0 || manager.ready()) throw new Error();
 * ```
 *
 * @module
 */
export {
  type ClusterStatus,
  createFleet,
  Fleet,
  type FleetOptions,
} from "../src/runtime/cluster/fleet.ts";
export type { ClientOptions } from "../src/client/client.ts";
export {
  type ClusterConfig,
  type ClusterEvents,
  type ClusterOrigin,
  type ClusterProvider,
  type FixedCluster,
  fixedClusters,
  type HubRule,
  KUBECONFIG_SECRET_LABEL,
  kubeconfigSecrets,
  type KubeconfigSecretsOptions,
} from "../src/runtime/cluster/provider.ts";
export { type HubAccess, hubOf } from "../src/runtime/cluster/hub.ts";
