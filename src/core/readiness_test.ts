// builtinReadiness against kubectl's own verdicts: each row is a status and what k8s.io/kubectl
// v0.37.2 says of it (`pkg/polymorphichelpers/rollout_status.go` for `kubectl rollout status`,
// `kubectl wait` for the rest): "done", "waiting" or "error", with kubectl's message where it
// prints one. The table is printed, so a reader sees every verdict side by side.
import assert from "node:assert/strict";
import { builtinReadiness, builtinReady, type Readiness } from "./readiness.ts";
import type { KubeObject } from "./object.ts";

type Verdict = "done" | "waiting" | "error";

interface Row {
  /** What the status is, in a few words. */
  readonly case: string;
  readonly object: KubeObject;
  /** kubectl's verdict. */
  readonly kubectl: Verdict;
  /** kubectl's message; kubeno's must be the same (kubectl's trailing "\n" aside). */
  readonly message?: string;
  /** Where kubeno's verdict differs from kubectl's on purpose, and why. */
  readonly kubeno?: Verdict;
}

function obj(
  apiVersion: string,
  kind: string,
  spec: unknown,
  status: unknown,
  generation = 2,
): KubeObject {
  return { apiVersion, kind, metadata: { name: "x", generation }, spec, status } as KubeObject;
}

const dep = (status: object, replicas = 2) =>
  obj("apps/v1", "Deployment", { replicas }, { observedGeneration: 2, ...status });
const sts = (status: object, spec: object = {}) =>
  obj("apps/v1", "StatefulSet", {
    replicas: 3,
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } },
    ...spec,
  }, { observedGeneration: 2, ...status });
const ds = (status: object, type = "RollingUpdate") =>
  obj("apps/v1", "DaemonSet", { updateStrategy: { type } }, { observedGeneration: 2, ...status });
const cond = (type: string, status: string, reason?: string) => ({
  conditions: [{ type, status, reason }],
});
const W = 'Waiting for deployment "x" rollout to finish:';

const ROWS: Row[] = [
  // Deployment: rollout status, check for check.
  {
    case: "generation not observed",
    object: obj("apps/v1", "Deployment", { replicas: 2 }, { observedGeneration: 1 }),
    kubectl: "waiting",
    message: "Waiting for deployment spec update to be observed...",
  },
  {
    case: "progress deadline exceeded",
    object: dep({
      replicas: 2,
      updatedReplicas: 1,
      ...cond("Progressing", "False", "ProgressDeadlineExceeded"),
    }),
    kubectl: "error",
    message: 'deployment "x" exceeded its progress deadline',
  },
  {
    case: "scale up: 1 of 2 updated",
    object: dep({ replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1 }),
    kubectl: "waiting",
    message: `${W} 1 out of 2 new replicas have been updated...`,
  },
  {
    case: "issue 55: replicas 2, updated 1, ready 1, available 1 (spec 1)",
    object: dep({ replicas: 2, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1 }, 1),
    kubectl: "waiting",
    message: `${W} 1 old replicas are pending termination...`,
  },
  {
    case: "image change: 2 updated, 1 old left",
    object: dep({ replicas: 3, updatedReplicas: 2, readyReplicas: 3, availableReplicas: 3 }),
    kubectl: "waiting",
    message: `${W} 1 old replicas are pending termination...`,
  },
  {
    case: "all updated, 1 of 2 available",
    object: dep({ replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 1 }),
    kubectl: "waiting",
    message: `${W} 1 of 2 updated replicas are available...`,
  },
  {
    case: "updated and ready, none reported available",
    object: dep({ replicas: 2, updatedReplicas: 2, readyReplicas: 2 }),
    kubectl: "waiting",
    message: `${W} 0 of 2 updated replicas are available...`,
  },
  {
    case: "rolled out",
    object: dep({ replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 }),
    kubectl: "done",
    message: 'deployment "x" successfully rolled out',
  },
  {
    case: "scaled to 0, old pods gone",
    object: dep({}, 0),
    kubectl: "done",
    message: 'deployment "x" successfully rolled out',
  },
  {
    case: "scale down: 3 replicas left of spec 1",
    object: dep({ replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3 }, 1),
    kubectl: "done",
    message: 'deployment "x" successfully rolled out',
  },
  // StatefulSet.
  {
    case: "statefulset never observed",
    object: sts({ observedGeneration: 0 }),
    kubectl: "waiting",
    message: "Waiting for statefulset spec update to be observed...",
  },
  {
    case: "statefulset 2 of 3 ready",
    object: sts({ readyReplicas: 2, updatedReplicas: 3 }),
    kubectl: "waiting",
    message: "Waiting for 1 pods to be ready...",
  },
  {
    case: "statefulset partition 1: 1 of 2 updated",
    object: sts({ readyReplicas: 3, updatedReplicas: 1 }, {
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 1 } },
    }),
    kubectl: "waiting",
    message: "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...",
  },
  {
    case: "statefulset partition 1: 2 updated",
    object: sts({ readyReplicas: 3, updatedReplicas: 2 }, {
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 1 } },
    }),
    kubectl: "done",
    message: "partitioned roll out complete: 2 new pods have been updated...",
  },
  {
    case: "statefulset without rollingUpdate, revisions differ",
    object: sts(
      { readyReplicas: 3, updatedReplicas: 1, updateRevision: "b", currentRevision: "a" },
      {
        updateStrategy: { type: "RollingUpdate" },
      },
    ),
    kubectl: "waiting",
    message: "waiting for statefulset rolling update to complete 1 pods at revision b...",
  },
  {
    case: "statefulset without rollingUpdate, one revision",
    object: sts(
      { readyReplicas: 3, currentReplicas: 3, updateRevision: "b", currentRevision: "b" },
      {
        updateStrategy: { type: "RollingUpdate" },
      },
    ),
    kubectl: "done",
    message: "statefulset rolling update complete 3 pods at revision b...",
  },
  {
    case: "statefulset OnDelete, all ready, none updated",
    object: sts({ readyReplicas: 3, updatedReplicas: 0 }, { updateStrategy: { type: "OnDelete" } }),
    kubectl: "error",
    kubeno: "done", // kubectl has no verdict; OnDelete replaces no pod until one is deleted
  },
  {
    case: "statefulset OnDelete, 2 of 3 ready",
    object: sts({ readyReplicas: 2 }, { updateStrategy: { type: "OnDelete" } }),
    kubectl: "error",
    kubeno: "waiting",
  },
  // DaemonSet.
  {
    case: "daemon set 1 of 2 updated",
    object: ds({ desiredNumberScheduled: 2, updatedNumberScheduled: 1, numberAvailable: 2 }),
    kubectl: "waiting",
    message:
      'Waiting for daemon set "x" rollout to finish: 1 out of 2 new pods have been updated...',
  },
  {
    case: "daemon set updated, 1 of 2 available",
    object: ds({
      desiredNumberScheduled: 2,
      updatedNumberScheduled: 2,
      numberReady: 2,
      numberAvailable: 1,
    }),
    kubectl: "waiting",
    message: 'Waiting for daemon set "x" rollout to finish: 1 of 2 updated pods are available...',
  },
  {
    case: "daemon set rolled out",
    object: ds({ desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2 }),
    kubectl: "done",
    message: 'daemon set "x" successfully rolled out',
  },
  {
    case: "daemon set OnDelete, all available",
    object: ds(
      { desiredNumberScheduled: 2, updatedNumberScheduled: 0, numberAvailable: 2 },
      "OnDelete",
    ),
    kubectl: "error",
    kubeno: "done",
  },
  // ReplicaSet (no kubectl verdict: as a Deployment's replicas, ready and available).
  {
    case: "replica set ready, not yet available",
    object: obj("apps/v1", "ReplicaSet", { replicas: 2 }, {
      observedGeneration: 2,
      readyReplicas: 2,
      availableReplicas: 1,
    }),
    kubectl: "waiting",
  },
  {
    case: "replica set available",
    object: obj("apps/v1", "ReplicaSet", { replicas: 2 }, {
      observedGeneration: 2,
      readyReplicas: 2,
      availableReplicas: 2,
    }),
    kubectl: "done",
  },
  // kubectl wait --for=condition=Complete / Ready, --for=jsonpath={.status.phase}=Bound.
  { case: "job running", object: obj("batch/v1", "Job", {}, { active: 1 }), kubectl: "waiting" },
  {
    case: "job complete",
    object: obj("batch/v1", "Job", {}, cond("Complete", "True")),
    kubectl: "done",
    message: 'job "x" condition met',
  },
  {
    case: "job failed",
    object: obj("batch/v1", "Job", {}, cond("Failed", "True", "BackoffLimitExceeded")),
    kubectl: "waiting", // kubectl wait --for=condition=Complete times out
    kubeno: "error", // kubeno says at once that it will not complete
  },
  {
    case: "pod not ready",
    object: obj("v1", "Pod", {}, { phase: "Running", ...cond("Ready", "False") }),
    kubectl: "waiting",
  },
  {
    case: "pod ready",
    object: obj("v1", "Pod", {}, { phase: "Running", ...cond("Ready", "True") }),
    kubectl: "done",
    message: 'pod "x" condition met',
  },
  {
    case: "pod failed",
    object: obj("v1", "Pod", {}, { phase: "Failed" }),
    kubectl: "waiting", // times out
    kubeno: "error",
  },
  {
    case: "claim pending",
    object: obj("v1", "PersistentVolumeClaim", {}, { phase: "Pending" }),
    kubectl: "waiting",
  },
  {
    case: "claim bound",
    object: obj("v1", "PersistentVolumeClaim", {}, { phase: "Bound" }),
    kubectl: "done",
    message: 'persistentvolumeclaim "x" condition met',
  },
  // kubectl wait --for=jsonpath='{.status.loadBalancer.ingress}' for a LoadBalancer Service.
  {
    case: "service ClusterIP",
    object: obj("v1", "Service", { type: "ClusterIP" }, {}),
    kubectl: "done",
  },
  {
    case: "service LoadBalancer, no address",
    object: obj("v1", "Service", { type: "LoadBalancer" }, { loadBalancer: {} }),
    kubectl: "waiting",
  },
  {
    case: "service LoadBalancer with address",
    object: obj("v1", "Service", { type: "LoadBalancer" }, {
      loadBalancer: { ingress: [{ ip: "10.0.0.9" }] },
    }),
    kubectl: "done",
  },
  {
    case: "ingress with address",
    object: obj("networking.k8s.io/v1", "Ingress", {}, {
      loadBalancer: { ingress: [{ ip: "10.0.0.9" }] },
    }),
    kubectl: "done",
  },
];

const verdictOf = (r: Readiness): Verdict => r.ready ? "done" : r.failed ? "error" : "waiting";

Deno.test("builtinReadiness: kubectl's verdict and message for every status in the table", () => {
  const table = ROWS.map((row) => {
    const got = builtinReadiness(row.object);
    assert.ok(got, `${row.case}: a verdict`);
    assert.ok(!(got.ready && got.failed), `${row.case}: never ready and failed at once`);
    return { row, got, kubeno: verdictOf(got) };
  });
  console.table(table.map(({ row, got, kubeno }) => ({
    kind: row.object.kind,
    status: row.case,
    kubectl: row.kubectl,
    kubeno,
    message: got.message,
  })));
  const wrong = (pick: (t: (typeof table)[number]) => boolean) =>
    table.filter(pick).map(({ row, got, kubeno }) =>
      `${row.object.kind}, ${row.case}: kubectl ${row.kubectl}, kubeno ${kubeno} ("${got.message}")`
    );
  assert.deepEqual(wrong(({ row, kubeno }) => kubeno !== (row.kubeno ?? row.kubectl)), []);
  assert.deepEqual(wrong(({ row, got }) => !!row.message && got.message !== row.message), []);
  for (const { row, got } of table) assert.equal(builtinReady(row.object), got.ready);
});

Deno.test("builtinReadiness: an Ingress's address is awaited only when asked", () => {
  const bare = obj("networking.k8s.io/v1", "Ingress", {}, { loadBalancer: {} });
  assert.equal(builtinReady(bare), true, "many clusters set no address: ready once it exists");
  const awaited = builtinReadiness(bare, { ingressAddress: true });
  assert.equal(awaited?.ready, false);
  assert.equal(awaited?.message, 'Waiting for ingress "x" to get a load-balancer address...');
});

Deno.test("builtinReadiness: other kinds have no verdict", () => {
  assert.equal(builtinReadiness(obj("v1", "ConfigMap", undefined, undefined)), undefined);
  assert.equal(builtinReady(obj("example.com/v1", "Deployment", {}, {})), undefined);
});
