/**
 * Dependent resources: the children of a primary declared as a graph beside its controller —
 * each with a desired state computed from the primary, the dependents it waits for and when
 * it is ready — applied in topological order behind readiness gates, pruned when no longer
 * desired (recorded with ApplySet labels, KEP-3659, so `kubectl` sees the set) and deleted in
 * reverse order from the finalizer when asked. The graph's kinds are owned by the controller
 * that names it in `owns`: `reconcile(primary, { owns: [graph] })`.
 *
 * This entry holds {@linkcode dependents}, the types beneath it, the ApplySet helpers and the
 * built-in readiness checks.
 *
 * @example A ConfigMap, then a Deployment, then a Service once the Deployment is ready
 * ```ts
 * import { dependents } from "./dependents.ts";
 * import { reconcile } from "./controller.ts";
 * import { ConfigMap, Deployment, Secret, Service } from "../core.ts";
 *
 * const labels = { app: "web" };
 * const children = dependents(Secret, {
 *   config: { resource: ConfigMap, desired: (s) => ({ metadata: { name: s.metadata.name! } }) },
 *   web: {
 *     resource: Deployment,
 *     dependsOn: ["config"],
 *     desired: (s) => ({
 *       metadata: { name: s.metadata.name! },
 *       spec: {
 *         selector: { matchLabels: labels },
 *         template: { metadata: { labels }, spec: { containers: [{ name: "web", image: "nginx" }] } },
 *       },
 *     }),
 *   },
 *   service: {
 *     resource: Service,
 *     dependsOn: ["web"],
 *     desired: (s) => ({ metadata: { name: s.metadata.name! }, spec: { selector: labels, ports: [{ port: 80 }] } }),
 *   },
 * });
 * const controller = reconcile(Secret, {
 *   owns: [children],
 *   async reconcile(secret, ctx) {
 *     const result = await children.reconcile(secret, ctx);
 *     ctx.log.info("{key}: {message}", { key: ctx.key, message: result.condition.message });
 *     if (result.error) throw result.error;
 *   },
 * });
 * if (children.order.join() !== "config,web,service") throw new Error();
 * if (!controller.watches.some((w) => w.resource.kind === "EndpointSlice")) throw new Error();
 * ```
 *
 * @module
 */
export { dependents } from "../src/runtime/dependents/dependents.ts";
export {
  type DeleteDependentsOptions,
  type Dependent,
  type DependentFailure,
  type DependentResult,
  type Dependents,
  DependentsError,
  type DependentsResult,
  type DependentState,
  type DesiredContext,
} from "../src/runtime/dependents/dependent.ts";
export {
  APPLYSET_GROUP_KINDS_ANNOTATION,
  APPLYSET_ID_LABEL,
  APPLYSET_PART_OF_LABEL,
  APPLYSET_TOOLING_ANNOTATION,
  applySetGroupKinds,
  applySetId,
  type ApplySetParent,
} from "../src/core/applyset.ts";
export {
  builtinReadiness,
  builtinReady,
  type Readiness,
  type ReadinessOptions,
} from "../src/core/readiness.ts";
export type { DependentKinds } from "../src/runtime/controller/reconcile.ts";
