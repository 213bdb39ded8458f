/**
 * Kubernetes' own API groups: the groups of the built-in kinds under `src/core/api`.
 *
 * @module
 */

// The API groups of Kubernetes' own kinds (those under src/core/api): every API server of a
// supported version serves them, so they are never waited for. Gateway API
// (`gateway.networking.k8s.io`) and other `*.k8s.io` groups served by CRDs are not here.
const BUILT_IN_GROUPS: ReadonlySet<string> = new Set([
  "",
  "admissionregistration.k8s.io",
  "apiextensions.k8s.io",
  "apiregistration.k8s.io",
  "apps",
  "authentication.k8s.io",
  "authorization.k8s.io",
  "autoscaling",
  "batch",
  "certificates.k8s.io",
  "coordination.k8s.io",
  "discovery.k8s.io",
  "events.k8s.io",
  "flowcontrol.apiserver.k8s.io",
  "networking.k8s.io",
  "node.k8s.io",
  "policy",
  "rbac.authorization.k8s.io",
  "resource.k8s.io",
  "scheduling.k8s.io",
  "storage.k8s.io",
  "storagemigration.k8s.io",
]);

/**
 * Whether an API group is one of Kubernetes' own, served by every API server kubeno supports
 * (not by a CustomResourceDefinition).
 *
 * @param group The API group; `""` for the core group.
 * @returns `true` for a built-in group.
 *
 * @example Gateway API is not built in
 * ```ts
 * import { isBuiltInGroup } from "./built_in_group.ts";
 * if (!isBuiltInGroup("apps") || isBuiltInGroup("gateway.networking.k8s.io")) throw new Error();
 * ```
 */
export function isBuiltInGroup(group: string): boolean {
  return BUILT_IN_GROUPS.has(group);
}
