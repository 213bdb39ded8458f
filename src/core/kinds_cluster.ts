/**
 * The kinds operators use to run and install themselves — RBAC, CustomResourceDefinitions,
 * admission webhook configurations, Leases and `events.k8s.io` Events — re-exported from the
 * generated modules (`src/core/api/`), and `Webhook`, the entry kubeno writes into both
 * webhook configurations.
 *
 * @example Grant read access to ConfigMaps
 * ```ts
 * import { Role } from "./kinds_cluster.ts";
 * const role: Role = {
 *   metadata: { name: "reader", namespace: "default" },
 *   rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] }],
 * };
 * if (Role.group !== "rbac.authorization.k8s.io" || role.rules?.length !== 1) throw new Error();
 * ```
 *
 * @module
 */
import type { OpenObject } from "./object.ts";
import type { LabelSelector } from "./kinds.ts";
import type { WebhookClientConfig } from "./api/admissionregistration/v1.ts";

export { Lease } from "./api/coordination/v1.ts";
export { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "./api/rbac/v1.ts";
export type { PolicyRule, RoleRef, Subject } from "./api/rbac/v1.ts";
export { CustomResourceDefinition } from "./api/apiextensions/v1.ts";
export {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "./api/admissionregistration/v1.ts";
export type { WebhookClientConfig } from "./api/admissionregistration/v1.ts";
export { EventsV1Event } from "./api/events/v1.ts";

/** One admission webhook. */
export interface Webhook extends OpenObject {
  /** Fully qualified name, e.g. `vmyapp.kubeno.dev`. */
  name: string;
  /** Where to call. */
  clientConfig: WebhookClientConfig;
  /** Operations and resources sent to it. */
  rules?: ({
    operations: string[];
    apiGroups: string[];
    apiVersions: string[];
    resources: string[];
    scope?: string;
  } & OpenObject)[];
  /** AdmissionReview versions understood, e.g. `["v1"]`. */
  admissionReviewVersions: string[];
  /** `None` or `NoneOnDryRun`. */
  sideEffects: string;
  /** `Fail` (default) or `Ignore`. */
  failurePolicy?: string;
  /** Seconds before the call times out. */
  timeoutSeconds?: number;
  /** Only objects in matching namespaces. */
  namespaceSelector?: LabelSelector;
  /** Only matching objects. */
  objectSelector?: LabelSelector;
}
