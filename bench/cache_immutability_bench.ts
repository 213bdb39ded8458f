// What keeping the cache immutable costs, per object: freezing it once when it arrives (what
// the informer does, so every read after that is free) against copying it on every read
// (controller-runtime's DeepCopy on Get/List). The objects are a Deployment of ~1.6 KB JSON,
// parsed fresh each iteration; "parse" alone is the baseline to subtract.
//
//   deno bench bench/cache_immutability_bench.ts
import { deepFreeze } from "../src/util/freeze.ts";

const N = 1_000;

const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: {
    name: "web",
    namespace: "prod",
    uid: "0f9e4c4e-6a55-4d4b-9d6b-5c1d2f0e9a11",
    resourceVersion: "123456",
    generation: 4,
    creationTimestamp: "2026-01-01T00:00:00Z",
    labels: { "app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web-prod" },
    annotations: { "deployment.kubernetes.io/revision": "4" },
    ownerReferences: [{
      apiVersion: "apps.kubeno.dev/v1alpha1",
      kind: "Myapp",
      name: "web",
      uid: "5b8a3f0c-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
      controller: true,
      blockOwnerDeletion: true,
    }],
  },
  spec: {
    replicas: 3,
    selector: { matchLabels: { "app.kubernetes.io/name": "web" } },
    template: {
      metadata: { labels: { "app.kubernetes.io/name": "web" } },
      spec: {
        containers: [{
          name: "app",
          image: "ghcr.io/example/web:1.2.3",
          ports: [{ name: "http", containerPort: 8080, protocol: "TCP" }],
          env: [{ name: "MODE", value: "production" }, { name: "LOG", value: "info" }],
          resources: { requests: { cpu: "100m", memory: "128Mi" } },
        }],
      },
    },
  },
  status: {
    observedGeneration: 4,
    replicas: 3,
    readyReplicas: 3,
    availableReplicas: 3,
    conditions: [
      { type: "Available", status: "True", reason: "MinimumReplicasAvailable" },
      { type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" },
    ],
  },
};
const text = JSON.stringify(deployment);
const parsed = Array.from({ length: N }, () => JSON.parse(text));
let sink: unknown;

Deno.bench({
  name: `parse (baseline, ${N} objects of ${text.length} B per iteration)`,
  group: "immutability",
  baseline: true,
  fn() {
    for (let i = 0; i < N; i++) sink = JSON.parse(text);
  },
});

Deno.bench({
  name: `parse + deepFreeze: once per watch event (${N} objects per iteration)`,
  group: "immutability",
  fn() {
    for (let i = 0; i < N; i++) sink = deepFreeze(JSON.parse(text));
  },
});

Deno.bench({
  name: `structuredClone: once per read, copy-on-read (${N} objects per iteration)`,
  group: "immutability",
  fn() {
    for (let i = 0; i < N; i++) sink = structuredClone(parsed[i]);
  },
});

Deno.bench({
  name: `read a frozen object: no copy (${N} reads per iteration)`,
  group: "immutability",
  fn() {
    for (let i = 0; i < N; i++) sink = parsed[i].spec.replicas;
  },
});

globalThis.addEventListener("unload", () => void sink);
