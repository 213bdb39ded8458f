/**
 * Whether a built-in workload is ready, judged from its own status the way `kubectl rollout
 * status` judges it: the status describes the current generation and every desired replica
 * is updated and ready. Kinds without a notion of readiness here return `undefined`.
 *
 * @module
 */
import type { KubeObject } from "./object.ts";

type Open = Record<string, any>;

/**
 * Whether `obj` is ready, for the kinds that have an unambiguous answer in their own status:
 *
 * - `apps/v1` Deployment, StatefulSet, ReplicaSet: `status.observedGeneration` is at least
 *   `metadata.generation`, and `updatedReplicas` (not for ReplicaSet) and `readyReplicas`
 *   reach `spec.replicas` (default 1); a Deployment must not report `Available=False`.
 * - `apps/v1` DaemonSet: observed, and `numberReady` and `updatedNumberScheduled` reach
 *   `desiredNumberScheduled`.
 * - `batch/v1` Job: the `Complete` condition is `True`.
 * - `v1` Pod: the `Ready` condition is `True`; PersistentVolumeClaim: `phase` is `Bound`.
 *
 * A Service's readiness needs its EndpointSlices, which its own status does not show: the
 * dependents workflow judges it.
 *
 * @param obj An object as the server stores it.
 * @returns `true` or `false` for the kinds above, `undefined` for every other kind.
 *
 * @example A Deployment with its replicas ready
 * ```ts
 * import { builtinReady } from "./readiness.ts";
 * const deployment = {
 *   apiVersion: "apps/v1", kind: "Deployment",
 *   metadata: { name: "web", generation: 2 }, spec: { replicas: 2 },
 *   status: { observedGeneration: 2, updatedReplicas: 2, readyReplicas: 2 },
 * };
 * const ready = builtinReady(deployment);
 * if (ready !== true) throw new Error();
 * ```
 */
export function builtinReady(obj: KubeObject): boolean | undefined {
  const o = obj as Open;
  const status: Open = o.status ?? {};
  const observed = (status.observedGeneration ?? 0) >= (obj.metadata.generation ?? 0);
  const want = o.spec?.replicas ?? 1;
  switch (`${obj.apiVersion}/${obj.kind}`) {
    case "apps/v1/Deployment":
      return observed && (status.updatedReplicas ?? 0) >= want &&
        (status.readyReplicas ?? 0) >= want && !conditionIs(status, "Available", "False");
    case "apps/v1/StatefulSet":
      return observed && (status.updatedReplicas ?? 0) >= want &&
        (status.readyReplicas ?? 0) >= want;
    case "apps/v1/ReplicaSet":
      return observed && (status.readyReplicas ?? 0) >= want;
    case "apps/v1/DaemonSet": {
      const desired = status.desiredNumberScheduled ?? 0;
      return observed && (status.numberReady ?? 0) >= desired &&
        (status.updatedNumberScheduled ?? 0) >= desired;
    }
    case "batch/v1/Job":
      return conditionIs(status, "Complete", "True");
    case "v1/Pod":
      return conditionIs(status, "Ready", "True");
    case "v1/PersistentVolumeClaim":
      return status.phase === "Bound";
    default:
      return undefined;
  }
}

function conditionIs(status: Open, type: string, value: string): boolean {
  return (status.conditions ?? []).some((c: Open) => c.type === type && c.status === value);
}
