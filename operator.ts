/**
 * The operator program beyond `operator(...)`: the manifests it deploys itself with
 * (Namespace, ServiceAccount, least-privilege RBAC derived from what the controllers touch,
 * Deployment, webhook Service and configurations), the Helm chart of the same objects
 * (`helmChart`, what `manifests --helm DIR` writes) and the option types of `operator()`.
 *
 * @example The RBAC a controller needs
 * ```ts
 * import { deriveRbac } from "./operator.ts";
 * import { ConfigMap, resource } from "./core.ts";
 *
 * const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
 * const rbac = deriveRbac([{ name: "widget", resource: Widget, owns: [ConfigMap], watches: [] }]);
 * const rules = rbac.cluster.map((r) => `${r.apiGroups}/${r.resources}`);
 * if (!rules.includes("example.com/widgets") || !rules.includes("/configmaps")) {
 *   throw new Error(rules.join());
 * }
 * ```
 *
 * @module
 */
export { type Operator, operator } from "./src/operator/operator.ts";
export type {
  LeaderElectionOptions,
  OperatorFleetOptions,
  OperatorOptions,
  OperatorShardingOptions,
} from "./src/operator/command/options.ts";
export type { OperatorWebhook, WebhookManifestContext } from "./src/webhook/manifests.ts";
export {
  type OperatorManifests,
  operatorManifests,
  type OperatorManifestsInit,
} from "./src/deploy/manifests.ts";
export {
  deriveRbac,
  type DeriveRbacOptions,
  type OperatorController,
  type OperatorRbac,
} from "./src/deploy/rbac.ts";
export { type HelmChart, helmChart, type HelmChartInit } from "./src/deploy/helm_chart.ts";
