/**
 * The workload kinds (`apps/v1`, `batch/v1`) kubeno's layers use, re-exported from the
 * generated modules (`src/core/api/`), and the helper types the replicated workloads share.
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
import type { OpenObject } from "./object.ts";
import type { LabelSelector, PodTemplateSpec, ResourceCondition } from "./kinds.ts";

export { DaemonSet, Deployment, ReplicaSet, StatefulSet } from "./api/apps/v1.ts";
export { Job } from "./api/batch/v1.ts";

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
