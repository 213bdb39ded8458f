/**
 * The objects an operator's manifests are made of, each kind declared once: the Namespace,
 * the ServiceAccount, Roles and ClusterRoles, their bindings. Both manifest sets build from
 * here — a single cluster's (`manifests.ts`) and a fleet's hub and members
 * (`fleet_manifests.ts`) — so a new kind, or a field every copy must carry, is one change.
 *
 * @module
 */
import type { PolicyRule } from "../core/kinds_cluster.ts";
import type { KubeObject } from "../core/object.ts";

const RBAC_GROUP = "rbac.authorization.k8s.io";
const RBAC = `${RBAC_GROUP}/v1`;

/** A subject of a binding: the operator's ServiceAccount. */
export interface ServiceAccountSubject {
  /** `ServiceAccount`. */
  readonly kind: "ServiceAccount";
  /** The ServiceAccount's name. */
  readonly name: string;
  /** Its namespace. */
  readonly namespace: string;
}

/**
 * A Namespace.
 *
 * @param metadata Its metadata (name, labels).
 * @returns The object.
 */
export function namespaceObject(metadata: KubeObject["metadata"]): KubeObject {
  return { apiVersion: "v1", kind: "Namespace", metadata };
}

/**
 * A ServiceAccount.
 *
 * @param metadata Its metadata (name, namespace, labels).
 * @returns The object.
 */
export function serviceAccountObject(metadata: KubeObject["metadata"]): KubeObject {
  return { apiVersion: "v1", kind: "ServiceAccount", metadata };
}

/**
 * A Role (with a namespace in `metadata`) or a ClusterRole.
 *
 * @param kind `Role` or `ClusterRole`.
 * @param metadata Its metadata.
 * @param rules Its rules.
 * @returns The object.
 *
 * @example A ClusterRole reading Pods
 * ```ts
 * import { roleObject } from "./objects.ts";
 * const r = roleObject("ClusterRole", { name: "op" }, [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }]);
 * if (r.apiVersion !== "rbac.authorization.k8s.io/v1" || r.kind !== "ClusterRole") throw new Error();
 * ```
 */
export function roleObject(
  kind: "ClusterRole" | "Role",
  metadata: KubeObject["metadata"],
  rules: PolicyRule[],
): KubeObject {
  return { apiVersion: RBAC, kind, metadata, rules } as KubeObject;
}

/**
 * A RoleBinding or ClusterRoleBinding of a role to subjects.
 *
 * @param kind `RoleBinding` or `ClusterRoleBinding`.
 * @param metadata Its metadata.
 * @param roleKind The kind of the role it binds.
 * @param roleName The role's name.
 * @param subjects Who is bound (copied).
 * @returns The object.
 */
export function bindingObject(
  kind: "ClusterRoleBinding" | "RoleBinding",
  metadata: KubeObject["metadata"],
  roleKind: "ClusterRole" | "Role",
  roleName: string,
  subjects: readonly object[],
): KubeObject {
  return {
    apiVersion: RBAC,
    kind,
    metadata,
    roleRef: { apiGroup: RBAC_GROUP, kind: roleKind, name: roleName },
    subjects: structuredClone(subjects),
  } as KubeObject;
}
