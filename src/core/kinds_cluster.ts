/**
 * Built-in kinds operators use to run and install themselves: RBAC, CustomResourceDefinitions,
 * admission webhook configurations, Leases and `events.k8s.io` Events. Each is both a value
 * and a type, as in `kinds.ts`.
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
import type * as Crd from "./crd.ts";
import type { KubeObject, ObjectMeta, OpenObject } from "./object.ts";
import { type Resource, resource } from "./resource.ts";
import type { LabelSelector } from "./kinds.ts";

/** A lease: the lock of leader election. */
export interface Lease extends KubeObject {
  /** The lock's state. */
  spec?: {
    /** Identity of the current holder. */
    holderIdentity?: string;
    /** Seconds a holder's claim lasts without renewal. */
    leaseDurationSeconds?: number;
    /** When the current holder acquired it, RFC 3339 with microseconds. */
    acquireTime?: string;
    /** When the holder last renewed it. */
    renewTime?: string;
    /** How many times it changed hands. */
    leaseTransitions?: number;
  } & OpenObject;
}
/** Leases (`coordination.k8s.io/v1`). */
export const Lease: Resource<Lease> = resource<Lease>({
  group: "coordination.k8s.io",
  version: "v1",
  kind: "Lease",
});

/** One RBAC rule. */
export interface PolicyRule {
  /** API groups; `""` is the core group, `*` all. */
  apiGroups?: string[];
  /** Resources, e.g. `deployments` or `deployments/status`. */
  resources?: string[];
  /** Verbs, e.g. `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`. */
  verbs: string[];
  /** Restrict to these object names. */
  resourceNames?: string[];
  /** Non-resource URLs such as `/healthz` (ClusterRoles only). */
  nonResourceURLs?: string[];
}

/** Who a binding grants the role to. */
export interface Subject {
  /** `User`, `Group` or `ServiceAccount`. */
  kind: string;
  /** Name of the subject. */
  name: string;
  /** Namespace of a ServiceAccount. */
  namespace?: string;
  /** `rbac.authorization.k8s.io` for users and groups. */
  apiGroup?: string;
}

/** What a binding grants. */
export interface RoleRef {
  /** Always `rbac.authorization.k8s.io`. */
  apiGroup: string;
  /** `Role` or `ClusterRole`. */
  kind: string;
  /** Name of the role. */
  name: string;
}

/** A namespaced role. */
export interface Role extends KubeObject {
  /** What the role allows. */
  rules?: PolicyRule[];
}
/** Roles (`rbac.authorization.k8s.io/v1`). */
export const Role: Resource<Role> = resource<Role>({
  group: "rbac.authorization.k8s.io",
  version: "v1",
  kind: "Role",
});

/** A cluster-wide role. */
export interface ClusterRole extends KubeObject {
  /** What the role allows. */
  rules?: PolicyRule[];
  /** Aggregates the rules of ClusterRoles matching these selectors. */
  aggregationRule?: { clusterRoleSelectors?: LabelSelector[] };
}
/** ClusterRoles (`rbac.authorization.k8s.io/v1`, cluster-scoped). */
export const ClusterRole: Resource<ClusterRole> = resource<ClusterRole>({
  group: "rbac.authorization.k8s.io",
  version: "v1",
  kind: "ClusterRole",
  namespaced: false,
});

/** Grants a Role or ClusterRole within one namespace. */
export interface RoleBinding extends KubeObject {
  /** Who is granted. */
  subjects?: Subject[];
  /** What is granted. */
  roleRef: RoleRef;
}
/** RoleBindings (`rbac.authorization.k8s.io/v1`). */
export const RoleBinding: Resource<RoleBinding> = resource<RoleBinding>({
  group: "rbac.authorization.k8s.io",
  version: "v1",
  kind: "RoleBinding",
});

/** Grants a ClusterRole cluster-wide. */
export interface ClusterRoleBinding extends KubeObject {
  /** Who is granted. */
  subjects?: Subject[];
  /** What is granted. */
  roleRef: RoleRef;
}
/** ClusterRoleBindings (`rbac.authorization.k8s.io/v1`, cluster-scoped). */
export const ClusterRoleBinding: Resource<ClusterRoleBinding> = resource<ClusterRoleBinding>({
  group: "rbac.authorization.k8s.io",
  version: "v1",
  kind: "ClusterRoleBinding",
  namespaced: false,
});

/**
 * A CustomResourceDefinition (`apiextensions.k8s.io/v1`), with `apiVersion` and `kind`
 * optional as for every object the client reads or writes; `defineResource(...).crd()` returns
 * one with both set.
 */
export interface CustomResourceDefinition {
  /** `apiextensions.k8s.io/v1`. */
  apiVersion?: string;
  /** `CustomResourceDefinition`. */
  kind?: string;
  /** Metadata; the name is `<plural>.<group>`. */
  metadata: ObjectMeta & { name: string };
  /** The definition. */
  spec: Crd.CustomResourceDefinitionSpec;
  /** Set by the server: conditions and accepted names. */
  status?: {
    /** `Established`, `NamesAccepted`, ... */
    conditions?: Crd.CustomResourceDefinitionCondition[];
    /** The names the server serves the resource under. */
    acceptedNames?: Crd.CustomResourceDefinitionNames;
  };
}
/** CustomResourceDefinitions (`apiextensions.k8s.io/v1`, cluster-scoped). */
export const CustomResourceDefinition: Resource<CustomResourceDefinition> = resource<
  CustomResourceDefinition
>({
  group: "apiextensions.k8s.io",
  version: "v1",
  kind: "CustomResourceDefinition",
  namespaced: false,
});

/** How the API server reaches a webhook. */
export interface WebhookClientConfig {
  /** In-cluster service. */
  service?: { name: string; namespace: string; path?: string; port?: number };
  /** External URL, `https://`. */
  url?: string;
  /** PEM CA bundle, base64-encoded. */
  caBundle?: string;
}

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

/** Validating admission webhooks. */
export interface ValidatingWebhookConfiguration extends KubeObject {
  /** The webhooks. */
  webhooks?: Webhook[];
}
/** ValidatingWebhookConfigurations (`admissionregistration.k8s.io/v1`, cluster-scoped). */
export const ValidatingWebhookConfiguration: Resource<ValidatingWebhookConfiguration> = resource<
  ValidatingWebhookConfiguration
>({
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind: "ValidatingWebhookConfiguration",
  namespaced: false,
});

/** Mutating admission webhooks. */
export interface MutatingWebhookConfiguration extends KubeObject {
  /** The webhooks; `reinvocationPolicy` may be set on each. */
  webhooks?: (Webhook & { reinvocationPolicy?: "Never" | "IfNeeded" })[];
}
/** MutatingWebhookConfigurations (`admissionregistration.k8s.io/v1`, cluster-scoped). */
export const MutatingWebhookConfiguration: Resource<MutatingWebhookConfiguration> = resource<
  MutatingWebhookConfiguration
>({
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind: "MutatingWebhookConfiguration",
  namespaced: false,
});

/** An `events.k8s.io/v1` event: the newer shape of the core/v1 `Event`. */
export interface EventsV1Event extends KubeObject {
  /** When it happened, RFC 3339 with microseconds. */
  eventTime: string;
  /** The object the event is about. */
  regarding?: {
    apiVersion?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    uid?: string;
  };
  /** CamelCase reason, e.g. `Created`. */
  reason?: string;
  /** Human-readable description. */
  note?: string;
  /** `Normal` or `Warning`. */
  type?: string;
  /** What action was taken or failed. */
  action?: string;
  /** Controller that emitted it. */
  reportingController?: string;
  /** Instance of that controller. */
  reportingInstance?: string;
  /** Repetitions of the event. */
  series?: { count: number; lastObservedTime: string };
}
/** Events (`events.k8s.io/v1`). */
export const EventsV1Event: Resource<EventsV1Event> = resource<EventsV1Event>({
  group: "events.k8s.io",
  version: "v1",
  kind: "Event",
});
