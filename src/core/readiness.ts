/**
 * Whether a built-in object is ready, judged from its own status the way kubectl judges it:
 * Deployments, StatefulSets and DaemonSets as `kubectl rollout status` does (k8s.io/kubectl
 * `pkg/polymorphichelpers/rollout_status.go`, same order of checks, same messages), Jobs,
 * Pods and PersistentVolumeClaims as `kubectl wait` does for `--for=condition=Complete`,
 * `--for=condition=Ready` and `--for=jsonpath='{.status.phase}'=Bound`. Kinds without a
 * notion of readiness here return `undefined`.
 *
 * @module
 */
import type { KubeObject } from "./object.ts";

type Open = Record<string, any>;

/** A verdict on a built-in object, with the message kubectl prints for the same status. */
export interface Readiness {
  /** The object is what its spec asks for: kubectl's rollout is done, or its wait is over. */
  readonly ready: boolean;
  /**
   * It will not become ready without a change to it: a Deployment past its progress deadline,
   * a failed Job or Pod, a lost claim. Never `true` when `ready` is.
   */
  readonly failed: boolean;
  /** Why, in kubectl's words where kubectl has them, e.g. `1 old replicas are pending termination`. */
  readonly message: string;
}

/** How to judge what the object alone cannot tell. */
export interface ReadinessOptions {
  /**
   * Wait for an Ingress to show a load-balancer address. Only an ingress controller sets one,
   * and many clusters (kind, kwok, most test clusters) run none: there an Ingress would never
   * be ready. Turn it on where the cluster's controller sets addresses.
   *
   * @default false
   */
  readonly ingressAddress?: boolean;
}

/**
 * Judges `obj` by kind, from its own status only:
 *
 * - `apps/v1` Deployment: `kubectl rollout status` — the status is observed, the rollout has
 *   not exceeded its progress deadline (then `failed`), every desired replica is updated, no
 *   old replica is left, and every updated replica is available.
 * - `apps/v1` StatefulSet: `kubectl rollout status` — observed, every desired replica ready,
 *   and the replicas above the `RollingUpdate` partition updated. With `OnDelete`, where
 *   kubectl answers "rollout status is only available for RollingUpdate strategy type": ready
 *   once observed with every desired replica ready (pods are only replaced when deleted).
 * - `apps/v1` DaemonSet: `kubectl rollout status` — observed, and every scheduled pod updated
 *   and available; `OnDelete` as for a StatefulSet.
 * - `apps/v1` ReplicaSet (kubectl has no verdict): observed, every desired replica ready and
 *   available.
 * - `batch/v1` Job: `Complete` is `True` (`Failed` is `True`: failed).
 * - `v1` Pod: `Ready` is `True` (phase `Failed`: failed). PersistentVolumeClaim: phase
 *   `Bound` (`Lost`: failed). Service: ready, except a `LoadBalancer` without an ingress
 *   address yet; whether it routes to endpoints is in its EndpointSlices, which the dependents
 *   workflow reads.
 * - `networking.k8s.io/v1` Ingress: ready once it has a load-balancer address, or at once
 *   unless `options.ingressAddress` is set.
 *
 * @param obj An object as the server stores it (defaults applied).
 * @param options What to wait for beyond the object's own status.
 * @returns The verdict for the kinds above, `undefined` for every other kind.
 *
 * @example A Deployment whose old replica is still terminating
 * ```ts
 * import { builtinReadiness } from "./readiness.ts";
 * const deployment = {
 *   apiVersion: "apps/v1", kind: "Deployment",
 *   metadata: { name: "web", generation: 2 }, spec: { replicas: 1 },
 *   status: { observedGeneration: 2, replicas: 2, updatedReplicas: 1, availableReplicas: 1 },
 * };
 * const verdict = builtinReadiness(deployment);
 * const want = 'Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...';
 * if (verdict?.ready !== false || verdict.message !== want) throw new Error(verdict?.message);
 * ```
 */
export function builtinReadiness(
  obj: KubeObject,
  options: ReadinessOptions = {},
): Readiness | undefined {
  const o = obj as Open;
  switch (`${obj.apiVersion}/${obj.kind}`) {
    case "apps/v1/Deployment":
      return deployment(o);
    case "apps/v1/StatefulSet":
      return statefulSet(o);
    case "apps/v1/DaemonSet":
      return daemonSet(o);
    case "apps/v1/ReplicaSet":
      return replicaSet(o);
    case "batch/v1/Job":
      return job(o);
    case "v1/Pod":
      return pod(o);
    case "v1/PersistentVolumeClaim":
      return claim(o);
    case "v1/Service":
      return service(o);
    case "networking.k8s.io/v1/Ingress":
      return ingress(o, options.ingressAddress ?? false);
    default:
      return undefined;
  }
}

/**
 * Whether `obj` is ready: {@linkcode builtinReadiness}'s verdict without its message.
 *
 * @param obj An object as the server stores it.
 * @param options What to wait for beyond the object's own status.
 * @returns `true` or `false` for the kinds {@linkcode builtinReadiness} judges, `undefined`
 * for every other kind.
 *
 * @example A Deployment with its replicas updated and available
 * ```ts
 * import { builtinReady } from "./readiness.ts";
 * const deployment = {
 *   apiVersion: "apps/v1", kind: "Deployment",
 *   metadata: { name: "web", generation: 2 }, spec: { replicas: 2 },
 *   status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 },
 * };
 * if (builtinReady(deployment) !== true) throw new Error();
 * ```
 */
export function builtinReady(obj: KubeObject, options?: ReadinessOptions): boolean | undefined {
  return builtinReadiness(obj, options)?.ready;
}

const waiting = (message: string): Readiness => ({ ready: false, failed: false, message });
const done = (message: string): Readiness => ({ ready: true, failed: false, message });
const failed = (message: string): Readiness => ({ ready: false, failed: true, message });

const ROLLING_ONLY = "rollout status is only available for RollingUpdate strategy type";

// kubectl's DeploymentStatusViewer, check for check.
function deployment(d: Open): Readiness {
  const name = d.metadata.name;
  const s: Open = d.status ?? {};
  if ((d.metadata.generation ?? 0) > (s.observedGeneration ?? 0)) {
    return waiting("Waiting for deployment spec update to be observed...");
  }
  if (condition(s, "Progressing")?.reason === "ProgressDeadlineExceeded") {
    return failed(`deployment "${name}" exceeded its progress deadline`);
  }
  const want: number | undefined = d.spec?.replicas;
  const [replicas, updated, available] = [
    s.replicas ?? 0,
    s.updatedReplicas ?? 0,
    s.availableReplicas ?? 0,
  ];
  const prefix = `Waiting for deployment "${name}" rollout to finish:`;
  if (want !== undefined && updated < want) {
    return waiting(`${prefix} ${updated} out of ${want} new replicas have been updated...`);
  }
  if (replicas > updated) {
    return waiting(`${prefix} ${replicas - updated} old replicas are pending termination...`);
  }
  if (available < updated) {
    return waiting(`${prefix} ${available} of ${updated} updated replicas are available...`);
  }
  return done(`deployment "${name}" successfully rolled out`);
}

// kubectl's StatefulSetStatusViewer, check for check; OnDelete judged by its pods' readiness.
function statefulSet(sts: Open): Readiness {
  const s: Open = sts.status ?? {};
  if (!s.observedGeneration || (sts.metadata.generation ?? 0) > s.observedGeneration) {
    return waiting("Waiting for statefulset spec update to be observed...");
  }
  const want: number | undefined = sts.spec?.replicas;
  const ready = s.readyReplicas ?? 0;
  if (want !== undefined && ready < want) {
    return waiting(`Waiting for ${want - ready} pods to be ready...`);
  }
  const strategy: Open = sts.spec?.updateStrategy ?? {};
  if ((strategy.type ?? "RollingUpdate") !== "RollingUpdate") {
    return done(`${ROLLING_ONLY}; all ${ready} pods are ready`);
  }
  const updated = s.updatedReplicas ?? 0;
  if (strategy.rollingUpdate) {
    const partition: number | undefined = strategy.rollingUpdate.partition;
    if (want !== undefined && partition !== undefined && updated < want - partition) {
      return waiting(
        `Waiting for partitioned roll out to finish: ${updated} out of ${
          want - partition
        } new pods have been updated...`,
      );
    }
    return done(`partitioned roll out complete: ${updated} new pods have been updated...`);
  }
  if (s.updateRevision !== s.currentRevision) {
    return waiting(
      `waiting for statefulset rolling update to complete ${updated} pods at revision ${s.updateRevision}...`,
    );
  }
  return done(
    `statefulset rolling update complete ${
      s.currentReplicas ?? 0
    } pods at revision ${s.currentRevision}...`,
  );
}

// kubectl's DaemonSetStatusViewer, check for check; OnDelete judged by its pods' availability.
function daemonSet(ds: Open): Readiness {
  const name = ds.metadata.name;
  const s: Open = ds.status ?? {};
  if ((ds.metadata.generation ?? 0) > (s.observedGeneration ?? 0)) {
    return waiting("Waiting for daemon set spec update to be observed...");
  }
  const [desired, updated, available] = [
    s.desiredNumberScheduled ?? 0,
    s.updatedNumberScheduled ?? 0,
    s.numberAvailable ?? 0,
  ];
  const prefix = `Waiting for daemon set "${name}" rollout to finish:`;
  const rolling = (ds.spec?.updateStrategy?.type ?? "RollingUpdate") === "RollingUpdate";
  if (rolling && updated < desired) {
    return waiting(`${prefix} ${updated} out of ${desired} new pods have been updated...`);
  }
  if (available < desired) {
    return waiting(`${prefix} ${available} of ${desired} updated pods are available...`);
  }
  return done(
    rolling
      ? `daemon set "${name}" successfully rolled out`
      : `${ROLLING_ONLY}; all ${available} pods are available`,
  );
}

function replicaSet(rs: Open): Readiness {
  const name = rs.metadata.name;
  const s: Open = rs.status ?? {};
  if ((rs.metadata.generation ?? 0) > (s.observedGeneration ?? 0)) {
    return waiting("Waiting for replica set spec update to be observed...");
  }
  const want: number = rs.spec?.replicas ?? 1;
  const [ready, available] = [s.readyReplicas ?? 0, s.availableReplicas ?? 0];
  if (ready < want || available < want) {
    return waiting(
      `Waiting for replica set "${name}": ${ready} of ${want} replicas are ready, ${available} available...`,
    );
  }
  return done(`replica set "${name}" has ${want} available replicas`);
}

function job(j: Open): Readiness {
  const name = j.metadata.name;
  const s: Open = j.status ?? {};
  if (condition(s, "Failed")?.status === "True") {
    return failed(`job "${name}" failed: ${condition(s, "Failed")!.reason ?? "Failed"}`);
  }
  if (condition(s, "Complete")?.status === "True") return done(`job "${name}" condition met`);
  return waiting(
    `Waiting for job "${name}" to complete: ${s.active ?? 0} active, ${
      s.succeeded ?? 0
    } succeeded, ${s.failed ?? 0} failed`,
  );
}

function pod(p: Open): Readiness {
  const name = p.metadata.name;
  const s: Open = p.status ?? {};
  if (condition(s, "Ready")?.status === "True") return done(`pod "${name}" condition met`);
  if (s.phase === "Failed") return failed(`pod "${name}" failed: ${s.reason ?? "Failed"}`);
  return waiting(`Waiting for pod "${name}" to be Ready (phase ${s.phase ?? "unknown"})`);
}

function claim(pvc: Open): Readiness {
  const name = pvc.metadata.name;
  const phase = pvc.status?.phase;
  if (phase === "Bound") return done(`persistentvolumeclaim "${name}" condition met`);
  if (phase === "Lost") return failed(`persistentvolumeclaim "${name}" lost its volume`);
  return waiting(
    `Waiting for persistentvolumeclaim "${name}" to be Bound (phase ${phase ?? "unknown"})`,
  );
}

function service(svc: Open): Readiness {
  const name = svc.metadata.name;
  if (svc.spec?.type !== "LoadBalancer") return done(`service "${name}" exists`);
  return addressed(svc)
    ? done(`service "${name}" has a load-balancer address`)
    : waiting(`Waiting for service "${name}" to get a load-balancer address...`);
}

function ingress(ing: Open, awaitAddress: boolean): Readiness {
  const name = ing.metadata.name;
  if (addressed(ing)) return done(`ingress "${name}" has a load-balancer address`);
  return awaitAddress
    ? waiting(`Waiting for ingress "${name}" to get a load-balancer address...`)
    : done(`ingress "${name}" exists (its load-balancer address is not awaited)`);
}

function addressed(obj: Open): boolean {
  return (obj.status?.loadBalancer?.ingress ?? []).length > 0;
}

function condition(status: Open, type: string): Open | undefined {
  return (status.conditions ?? []).find((c: Open) => c.type === type);
}
