/**
 * Built-in Kubernetes kinds of the core (`v1`) group as typed resources. Each kind is both a
 * value (the {@link Resource} to pass to the client, `owns: [...]`, informers) and a type
 * (the object), so `const cm: ConfigMap = await client.get(ConfigMap, "x")` reads naturally.
 *
 * The object types carry the fields operators commonly use; every spec and status also
 * accepts any other field, so objects the server returns are never rejected.
 *
 * Workload kinds (apps/v1, batch/v1) are in `kinds_workloads.ts`; cluster-level kinds (RBAC,
 * CRDs, webhooks, leases, events.k8s.io) in `kinds_cluster.ts`.
 *
 * @example A kind is a value and a type
 * ```ts
 * import { ConfigMap } from "./kinds.ts";
 * const cm: ConfigMap = { metadata: { name: "settings" }, data: { mode: "fast" } };
 * if (ConfigMap.plural !== "configmaps" || !cm.data) throw new Error();
 * ```
 *
 * @module
 */
import type { KubeObject, ObjectMeta, OpenObject } from "./object.ts";
import { type Resource, resource } from "./resource.ts";

/** A label selector (`metav1.LabelSelector`). */
export interface LabelSelector {
  /** Labels that must match exactly. */
  matchLabels?: Record<string, string>;
  /** Set-based requirements. */
  matchExpressions?: {
    key: string;
    operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
    values?: string[];
  }[];
}

/** An environment variable of a container. */
export interface EnvVar {
  /** Variable name. */
  name: string;
  /** Literal value. */
  value?: string;
  /** Value from a ConfigMap, Secret, field or resource. */
  valueFrom?: OpenObject;
}

/** A container port. */
export interface ContainerPort {
  /** Port number in the container. */
  containerPort: number;
  /** Named port, referable from Services. */
  name?: string;
  /** `TCP` (default), `UDP` or `SCTP`. */
  protocol?: string;
}

/** A container of a pod. */
export interface Container extends OpenObject {
  /** Container name, unique in the pod. */
  name: string;
  /** Image reference. */
  image?: string;
  /** Entrypoint. */
  command?: string[];
  /** Arguments. */
  args?: string[];
  /** Environment variables. */
  env?: EnvVar[];
  /** Ports exposed. */
  ports?: ContainerPort[];
  /** CPU/memory requests and limits, e.g. `{ limits: { cpu: "500m" } }`. */
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
  /** Volume mounts. */
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
  /** `Always`, `IfNotPresent` or `Never`. */
  imagePullPolicy?: string;
}

/** The spec of a pod (`core/v1 PodSpec`). */
export interface PodSpec extends OpenObject {
  /** Containers. */
  containers: Container[];
  /** Init containers. */
  initContainers?: Container[];
  /** Volumes. */
  volumes?: ({ name: string } & OpenObject)[];
  /** Service account to run as. */
  serviceAccountName?: string;
  /** Node selector labels. */
  nodeSelector?: Record<string, string>;
  /** Node the pod is bound to. */
  nodeName?: string;
  /** `Always`, `OnFailure` or `Never`. */
  restartPolicy?: string;
  /** Tolerations. */
  tolerations?: OpenObject[];
}

/** A pod template of a workload. */
export interface PodTemplateSpec {
  /** Metadata of the pods created. */
  metadata?: ObjectMeta;
  /** Spec of the pods created. */
  spec?: PodSpec;
}

/** A condition as core/v1 and apps/v1 report them (`lastTransitionTime` optional). */
export interface ResourceCondition extends OpenObject {
  /** Condition type, e.g. `Ready` or `Available`. */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: string;
  /** Machine-readable reason. */
  reason?: string;
  /** Human-readable message. */
  message?: string;
  /** When `status` last changed. */
  lastTransitionTime?: string;
}

/** A pod. */
export interface Pod extends KubeObject {
  /** Desired state. */
  spec?: PodSpec;
  /** Observed state. */
  status?: {
    /** `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`. */
    phase?: string;
    /** Conditions such as `Ready`. */
    conditions?: ResourceCondition[];
    /** Pod IP. */
    podIP?: string;
    /** Node IP. */
    hostIP?: string;
    /** Per-container state. */
    containerStatuses?: ({ name: string; ready: boolean; restartCount: number } & OpenObject)[];
  } & OpenObject;
}
/** Pods (`v1`). */
export const Pod: Resource<Pod> = resource<Pod>({ group: "", version: "v1", kind: "Pod" });

/** A service port. */
export interface ServicePort extends OpenObject {
  /** Port the service exposes. */
  port: number;
  /** Port name; required when there are several. */
  name?: string;
  /** Pod port, number or name. */
  targetPort?: number | string;
  /** `TCP` (default), `UDP` or `SCTP`. */
  protocol?: string;
  /** Node port for `NodePort`/`LoadBalancer` services. */
  nodePort?: number;
}

/** A service. */
export interface Service extends KubeObject {
  /** Desired state. */
  spec?: {
    /** Pods selected. */
    selector?: Record<string, string>;
    /** Ports exposed. */
    ports?: ServicePort[];
    /** `ClusterIP` (default), `NodePort`, `LoadBalancer` or `ExternalName`. */
    type?: string;
    /** Cluster IP; `None` for headless services. */
    clusterIP?: string;
  } & OpenObject;
  /** Observed state. */
  status?: OpenObject;
}
/** Services (`v1`). */
export const Service: Resource<Service> = resource<Service>({
  group: "",
  version: "v1",
  kind: "Service",
});

/** A config map. */
export interface ConfigMap extends KubeObject {
  /** UTF-8 values. */
  data?: Record<string, string>;
  /** Base64-encoded binary values. */
  binaryData?: Record<string, string>;
  /** When true, data cannot change. */
  immutable?: boolean;
}
/** ConfigMaps (`v1`). */
export const ConfigMap: Resource<ConfigMap> = resource<ConfigMap>({
  group: "",
  version: "v1",
  kind: "ConfigMap",
});

/** A secret. Values in `data` are base64-encoded; `stringData` is write-only plain text. */
export interface Secret extends KubeObject {
  /** Base64-encoded values. */
  data?: Record<string, string>;
  /** Plain-text values, merged into `data` on write. */
  stringData?: Record<string, string>;
  /** Type, e.g. `Opaque` or `kubernetes.io/tls`. */
  type?: string;
  /** When true, data cannot change. */
  immutable?: boolean;
}
/** Secrets (`v1`). */
export const Secret: Resource<Secret> = resource<Secret>({
  group: "",
  version: "v1",
  kind: "Secret",
});

/** A service account. */
export interface ServiceAccount extends KubeObject {
  /** Secrets the account may use. */
  secrets?: { name?: string }[];
  /** Pull secrets for pods of this account. */
  imagePullSecrets?: { name: string }[];
  /** Whether pods mount the account's token by default. */
  automountServiceAccountToken?: boolean;
}
/** ServiceAccounts (`v1`). */
export const ServiceAccount: Resource<ServiceAccount> = resource<ServiceAccount>({
  group: "",
  version: "v1",
  kind: "ServiceAccount",
});

/** A namespace. */
export interface Namespace extends KubeObject {
  /** Finalizers of the namespace lifecycle. */
  spec?: { finalizers?: string[] };
  /** `Active` or `Terminating`. */
  status?: { phase?: string; conditions?: ResourceCondition[] } & OpenObject;
}
/** Namespaces (`v1`, cluster-scoped). */
export const Namespace: Resource<Namespace> = resource<Namespace>({
  group: "",
  version: "v1",
  kind: "Namespace",
  namespaced: false,
});

/** A node. */
export interface Node extends KubeObject {
  /** Desired state. */
  spec?: { unschedulable?: boolean; taints?: OpenObject[]; podCIDR?: string } & OpenObject;
  /** Observed state. */
  status?: {
    /** Conditions such as `Ready`. */
    conditions?: ResourceCondition[];
    /** Addresses, e.g. `InternalIP`. */
    addresses?: { type: string; address: string }[];
    /** Total resources. */
    capacity?: Record<string, string>;
    /** Resources available for pods. */
    allocatable?: Record<string, string>;
  } & OpenObject;
}
/** Nodes (`v1`, cluster-scoped). */
export const Node: Resource<Node> = resource<Node>({
  group: "",
  version: "v1",
  kind: "Node",
  namespaced: false,
});

/** A core/v1 event: what kubectl describe shows under Events. */
export interface Event extends KubeObject {
  /** The object the event is about. */
  involvedObject: {
    apiVersion?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    fieldPath?: string;
  };
  /** Short CamelCase reason, e.g. `Created`. */
  reason?: string;
  /** Human-readable description. */
  message?: string;
  /** `Normal` or `Warning`. */
  type?: string;
  /** Component that reported the event. */
  source?: { component?: string; host?: string };
  /** When the event first happened. */
  firstTimestamp?: string;
  /** When it most recently happened. */
  lastTimestamp?: string;
  /** How many times it happened. */
  count?: number;
  /** When it happened, with microseconds. */
  eventTime?: string;
  /** What action was taken or failed, e.g. `Reconcile`. */
  action?: string;
  /** Controller that emitted the event, e.g. `myapp-operator`. */
  reportingComponent?: string;
  /** Instance of the controller, e.g. its pod name. */
  reportingInstance?: string;
}
/** Events (`v1`). */
export const Event: Resource<Event> = resource<Event>({ group: "", version: "v1", kind: "Event" });
