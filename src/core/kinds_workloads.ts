/**
 * Built-in workload kinds (`apps/v1` and `batch/v1`) as typed resources; each is both a value
 * and a type, as in `kinds.ts`.
 *
 * @example Own Deployments
 * ```ts
 * import { Deployment } from "./kinds_workloads.ts";
 * const d: Deployment = {
 *   metadata: { name: "web" },
 *   spec: {
 *     selector: { matchLabels: { app: "web" } },
 *     template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "nginx" }] } },
 *   },
 * };
 * if (Deployment.apiVersion !== "apps/v1" || d.spec?.replicas !== undefined) throw new Error();
 * ```
 *
 * @module
 */
import type { KubeObject, OpenObject } from "./object.ts";
import { type Resource, resource } from "./resource.ts";
import type { LabelSelector, PodTemplateSpec, ResourceCondition } from "./kinds.ts";

/** The spec fields Deployments, ReplicaSets, StatefulSets and DaemonSets share. */
export interface WorkloadSpec extends OpenObject {
  /** Pods this workload owns. */
  selector: LabelSelector;
  /** Template of the pods created. */
  template: PodTemplateSpec;
}

/** The status fields of replicated workloads. */
export interface ReplicaStatus extends OpenObject {
  /** Generation the status was computed from. */
  observedGeneration?: number;
  /** Pods created. */
  replicas?: number;
  /** Pods ready. */
  readyReplicas?: number;
  /** Pods available for at least `minReadySeconds`. */
  availableReplicas?: number;
  /** Pods running the current template. */
  updatedReplicas?: number;
  /** Conditions such as `Available` and `Progressing`. */
  conditions?: ResourceCondition[];
}

/** A deployment. */
export interface Deployment extends KubeObject {
  /** Desired state. */
  spec?: WorkloadSpec & {
    /** Desired pods. */
    replicas?: number;
    /** `RollingUpdate` (default) or `Recreate`, with parameters. */
    strategy?: OpenObject;
    /** Stops rollouts while true. */
    paused?: boolean;
  };
  /** Observed state. */
  status?: ReplicaStatus;
}
/** Deployments (`apps/v1`). */
export const Deployment: Resource<Deployment> = resource<Deployment>({
  group: "apps",
  version: "v1",
  kind: "Deployment",
});

/** A replica set. */
export interface ReplicaSet extends KubeObject {
  /** Desired state. */
  spec?: WorkloadSpec & { replicas?: number };
  /** Observed state. */
  status?: ReplicaStatus;
}
/** ReplicaSets (`apps/v1`). */
export const ReplicaSet: Resource<ReplicaSet> = resource<ReplicaSet>({
  group: "apps",
  version: "v1",
  kind: "ReplicaSet",
});

/** A stateful set. */
export interface StatefulSet extends KubeObject {
  /** Desired state. */
  spec?: WorkloadSpec & {
    /** Desired pods. */
    replicas?: number;
    /** Headless service giving pods their network identity. */
    serviceName?: string;
    /** Per-pod persistent volume claims. */
    volumeClaimTemplates?: OpenObject[];
    /** `OrderedReady` (default) or `Parallel`. */
    podManagementPolicy?: string;
  };
  /** Observed state. */
  status?: ReplicaStatus & { currentReplicas?: number };
}
/** StatefulSets (`apps/v1`). */
export const StatefulSet: Resource<StatefulSet> = resource<StatefulSet>({
  group: "apps",
  version: "v1",
  kind: "StatefulSet",
});

/** A daemon set. */
export interface DaemonSet extends KubeObject {
  /** Desired state. */
  spec?: WorkloadSpec & { updateStrategy?: OpenObject };
  /** Observed state. */
  status?: {
    desiredNumberScheduled?: number;
    currentNumberScheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
    updatedNumberScheduled?: number;
    observedGeneration?: number;
    conditions?: ResourceCondition[];
  } & OpenObject;
}
/** DaemonSets (`apps/v1`). */
export const DaemonSet: Resource<DaemonSet> = resource<DaemonSet>({
  group: "apps",
  version: "v1",
  kind: "DaemonSet",
});

/** A job. */
export interface Job extends KubeObject {
  /** Desired state. */
  spec?: {
    /** Template of the pods created. */
    template: PodTemplateSpec;
    /** Pods that must succeed. */
    completions?: number;
    /** Pods running at once. */
    parallelism?: number;
    /** Retries before the job fails. */
    backoffLimit?: number;
    /** Seconds the job may run. */
    activeDeadlineSeconds?: number;
    /** Seconds after finishing before the job is deleted. */
    ttlSecondsAfterFinished?: number;
    /** Pods of the job; usually generated. */
    selector?: LabelSelector;
    /** Pauses the job while true. */
    suspend?: boolean;
  } & OpenObject;
  /** Observed state. */
  status?: {
    /** Pods running. */
    active?: number;
    /** Pods that succeeded. */
    succeeded?: number;
    /** Pods that failed. */
    failed?: number;
    /** When the job started. */
    startTime?: string;
    /** When it completed. */
    completionTime?: string;
    /** `Complete`, `Failed`, `Suspended`... */
    conditions?: ResourceCondition[];
  } & OpenObject;
}
/** Jobs (`batch/v1`). */
export const Job: Resource<Job> = resource<Job>({ group: "batch", version: "v1", kind: "Job" });
