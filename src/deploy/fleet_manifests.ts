/**
 * The RBAC of a fleet operator, in two manifest sets: what it needs on the hub (its
 * ServiceAccount, reading its provider's Secrets and its `hubReads` kinds) and what it needs
 * on each member cluster (a ServiceAccount whose token goes into the member's kubeconfig
 * Secret, bound to the rules the controllers derive, see {@linkcode deriveRbac}).
 *
 * @module
 */
import type { PolicyRule } from "../core/kinds_cluster.ts";
import type { KubeObject } from "../core/object.ts";
import type { Resource } from "../core/resource.ts";
import { deriveRbac, type OperatorController } from "./rbac.ts";
import {
  bindingObject,
  namespaceObject,
  roleObject,
  serviceAccountObject,
  type ServiceAccountSubject,
} from "./objects.ts";

/** One rule the fleet's provider needs on the hub; a Role in `namespace`, else a ClusterRole. */
export interface FleetHubRule {
  /** Where the Role lives; absent for a ClusterRole. */
  readonly namespace?: string;
  /** API groups, `""` for core. */
  readonly apiGroups: readonly string[];
  /** Resources, e.g. `secrets`. */
  readonly resources: readonly string[];
  /** Verbs. */
  readonly verbs: readonly string[];
}

/** What {@linkcode fleetManifests} needs. */
export interface FleetManifestsInit {
  /** The operator's name: its ServiceAccount, Roles and bindings. */
  readonly name: string;
  /** The operator's namespace on the hub, and its ServiceAccount's on each member. */
  readonly namespace: string;
  /** The controllers run on every member. */
  readonly controllers: readonly OperatorController[];
  /** The provider's rules on the hub (`ClusterProvider.hubRules`). */
  readonly hubRules?: readonly FleetHubRule[];
  /**
   * Hub kinds the reconciles read (`hubReads`), granted `get`/`list`/`watch`.
   * @default []
   */
  readonly hubReads?: readonly Resource[];
  /**
   * The hub namespace `hubReads` are read in.
   * @default all namespaces (a ClusterRole)
   */
  readonly hubNamespace?: string;
  /**
   * The namespace of the Leases the replicas spread the members over themselves with (a
   * sharded fleet): the hub's Role there also grants them.
   * @default none (one replica, no Leases)
   */
  readonly leases?: string;
}

/** The two manifest sets. */
export interface FleetManifests {
  /** To apply on the hub. */
  hub: KubeObject[];
  /** To apply on every member cluster. */
  member: KubeObject[];
}

const READ = ["get", "list", "watch"];

/**
 * The hub's and the members' manifests of a fleet operator.
 *
 * @param init Name, namespace, controllers, the provider's hub rules and `hubReads`.
 * @returns The hub set and the member set.
 *
 * @example A fleet reading Secrets in "fleet-system" and pushing ConfigMaps to its members
 * ```ts
 * import { fleetManifests } from "./fleet_manifests.ts";
 * import { resource } from "../core/resource.ts";
 * const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
 * const m = fleetManifests({
 *   name: "fleet",
 *   namespace: "fleet-system",
 *   controllers: [{ name: "push", resource: ConfigMap, owns: [], watches: [] }],
 *   hubRules: [{ namespace: "fleet-system", apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch"] }],
 * });
 * if (!m.hub.some((o) => o.kind === "Role") || !m.member.some((o) => o.kind === "ClusterRole")) {
 *   throw new Error();
 * }
 * ```
 */
export function fleetManifests(init: FleetManifestsInit): FleetManifests {
  const { name, namespace } = init;
  const sa = serviceAccountObject({ name, namespace });
  const subject: ServiceAccountSubject = { kind: "ServiceAccount", name, namespace };
  const byNamespace = new Map<string | undefined, PolicyRule[]>();
  const add = (ns: string | undefined, rule: PolicyRule) => {
    const list = byNamespace.get(ns) ?? [];
    list.push(rule);
    byNamespace.set(ns, list);
  };
  for (const r of init.hubRules ?? []) {
    add(r.namespace, {
      apiGroups: [...r.apiGroups],
      resources: [...r.resources],
      verbs: [...r.verbs],
    });
  }
  for (const res of init.hubReads ?? []) {
    add(res.namespaced ? init.hubNamespace : undefined, {
      apiGroups: [res.group],
      resources: [res.plural],
      verbs: READ,
    });
  }
  if (init.leases) {
    add(init.leases, {
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      verbs: ["get", "list", "watch", "create", "update", "delete"],
    });
  }
  const hub: KubeObject[] = [sa];
  for (const [ns, rules] of [...byNamespace].sort(([a], [b]) => (a ?? "").localeCompare(b ?? ""))) {
    const roleName = `${name}-hub`;
    if (ns === undefined) {
      hub.push(
        roleObject("ClusterRole", { name: roleName }, rules),
        bindingObject("ClusterRoleBinding", { name: roleName }, "ClusterRole", roleName, [subject]),
      );
    } else {
      hub.push(
        roleObject("Role", { name: roleName, namespace: ns }, rules),
        bindingObject("RoleBinding", { name: roleName, namespace: ns }, "Role", roleName, [
          subject,
        ]),
      );
    }
  }
  const rbac = deriveRbac(init.controllers);
  const memberRole = `${name}-member`;
  const member: KubeObject[] = [
    namespaceObject({ name: namespace }),
    sa,
    roleObject("ClusterRole", { name: memberRole }, [
      ...rbac.cluster,
      ...rbac.namespaced,
      ...Object.values(rbac.inNamespaces).flat(),
    ]),
    bindingObject("ClusterRoleBinding", { name: memberRole }, "ClusterRole", memberRole, [subject]),
  ];
  return { hub, member };
}
