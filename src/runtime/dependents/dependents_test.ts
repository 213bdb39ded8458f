// The graph's declaration checks and the workflow's decisions (plan, gates, pruning, the
// condition) on an in-memory context; tests/dependents_test.ts runs it on a real cluster.
import assert from "node:assert/strict";
import { dependents } from "./dependents.ts";
import { DEPENDENT_LABEL } from "./_workflow.ts";
import { reconcile, type ReconcileContext } from "../controller/reconcile.ts";
import { ConfigMap, Secret, Service } from "../../core/kinds.ts";
import { Deployment, Job } from "../../core/kinds_workloads.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { APPLYSET_PART_OF_LABEL, applySetGroupKinds } from "../../core/applyset.ts";
import { builtinReady } from "../../core/readiness.ts";

const cm = (name: string) => ({ metadata: { name } });

Deno.test("dependents: declaration errors name the dependent", () => {
  assert.throws(
    () =>
      dependents(Secret, { a: { resource: ConfigMap, dependsOn: ["b"], desired: () => cm("a") } }),
    { name: "TypeError", message: /"a" depends on "b", which is not declared/ },
  );
  assert.throws(
    () =>
      dependents(Secret, {
        a: { resource: ConfigMap, dependsOn: ["b"], desired: () => cm("a") },
        b: { resource: ConfigMap, dependsOn: ["a"], desired: () => cm("b") },
      }),
    { name: "TypeError", message: /form a cycle/ },
  );
  assert.throws(
    () => dependents(Secret, { "not a label": { resource: ConfigMap, desired: () => cm("a") } }),
    { message: /name "not a label" is not a label value/ },
  );
});

Deno.test("dependents: topological order, owned kinds once, EndpointSlices only for Services", () => {
  const g = dependents(Secret, {
    svc: { resource: Service, dependsOn: ["dep"], desired: () => cm("s") },
    dep: { resource: Deployment, dependsOn: ["a", "b"], desired: () => cm("d") },
    a: { resource: ConfigMap, desired: () => cm("a") },
    b: { resource: ConfigMap, desired: () => cm("b") },
  });
  assert.deepEqual(g.order, ["a", "b", "dep", "svc"]);
  assert.deepEqual(g.owns.map((k) => k.kind), ["ConfigMap", "Deployment", "Service"]);
  assert.deepEqual(g.watches.map((w) => w.resource.kind), ["EndpointSlice"]);
  const c = reconcile(Secret, { owns: [ConfigMap, g], reconcile() {} });
  assert.deepEqual(c.owns.map((k) => k.kind), ["ConfigMap", "Deployment", "Service"]);
  assert.equal(c.applySetParent, true, "a graph in owns makes the primary an ApplySet parent");
  const own = dependents(Secret, {
    svc: { resource: Service, desired: () => cm("s"), ready: () => true },
  });
  assert.deepEqual(own.watches, [], "a Service with its own readiness needs no EndpointSlices");
  assert.equal(
    applySetGroupKinds(g.owns),
    "ConfigMap,Deployment.apps,Service",
  );
});

Deno.test("builtinReady: workloads, jobs, unknown kinds", () => {
  const dep = (status: Record<string, unknown>) => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "d", generation: 3 },
    spec: { replicas: 2 },
    status,
  });
  assert.equal(
    builtinReady(
      dep({
        observedGeneration: 3,
        replicas: 2,
        updatedReplicas: 2,
        readyReplicas: 2,
        availableReplicas: 2,
      }),
    ),
    true,
  );
  assert.equal(
    builtinReady(dep({ observedGeneration: 2, updatedReplicas: 2, readyReplicas: 2 })),
    false,
  );
  assert.equal(
    builtinReady(dep({ observedGeneration: 3, updatedReplicas: 2, readyReplicas: 1 })),
    false,
  );
  const job = { apiVersion: Job.apiVersion, kind: "Job", metadata: { name: "j" } };
  const complete = { ...job, status: { conditions: [{ type: "Complete", status: "True" }] } };
  assert.equal(
    builtinReady(complete),
    true,
  );
  assert.equal(builtinReady(job), false);
  assert.equal(
    builtinReady({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } }),
    undefined,
  );
});

/** A context over an in-memory store: enough for the workflow's decisions. */
function memoryContext(primary: KubeObject) {
  const store = new Map<string, KubeObject>();
  const log: string[] = [];
  const keyOf = (res: Resource<any>, name: string) => `${res.kind}/${name}`;
  let inFlight = 0;
  let maxInFlight = 0;
  const cache = {
    get: (res: Resource<any>, name: string) => store.get(keyOf(res, name)),
    list: (res: Resource<any>, o: { labelSelector?: Record<string, string> } = {}) =>
      [...store.entries()].filter(([k]) => k.startsWith(`${res.kind}/`)).map(([, v]) => v)
        .filter((v) =>
          Object.entries(o.labelSelector ?? {}).every(([l, x]) => v.metadata.labels?.[l] === x)
        ),
  };
  const ctx = {
    key: "ns/p",
    cache,
    async apply(res: Resource<any>, obj: KubeObject) {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      const stored = {
        ...obj,
        apiVersion: res.apiVersion,
        kind: res.kind,
        metadata: {
          ...obj.metadata,
          namespace: "ns",
          ownerReferences: [{ controller: true, uid: primary.metadata.uid }],
        },
      } as KubeObject;
      store.set(keyOf(res, obj.metadata.name!), stored);
      log.push(`apply ${res.kind}/${obj.metadata.name}`);
      return stored;
    },
    delete(res: Resource<any>, obj: KubeObject) {
      store.delete(keyOf(res, obj.metadata.name!));
      log.push(`delete ${res.kind}/${obj.metadata.name}`);
      return Promise.resolve();
    },
    patch: () => Promise.resolve(primary),
  } as unknown as ReconcileContext<any>;
  return { ctx, store, log, maxInFlight: () => maxInFlight };
}

Deno.test("workflow: gates, concurrency, absent branches, pruning in reverse order", async () => {
  const primary = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "p", namespace: "ns", uid: "u1" },
  };
  let on = true;
  let depReady = false;
  const g = dependents(Secret, {
    a: { resource: ConfigMap, desired: () => cm("a") },
    b: { resource: ConfigMap, desired: () => cm("b") },
    dep: {
      resource: Deployment,
      dependsOn: ["a", "b"],
      desired: () => cm("d"),
      ready: () => depReady,
    },
    svc: {
      resource: Service,
      dependsOn: ["dep"],
      desired: () => on ? cm("s") : undefined,
      ready: () => true,
    },
    extra: { resource: Service, dependsOn: ["svc"], desired: () => cm("x"), ready: () => true },
  });
  const m = memoryContext(primary);
  let r = await g.reconcile(primary, m.ctx);
  assert.equal(m.maxInFlight(), 2, "a and b are applied at once");
  assert.deepEqual(Object.values(r.dependents).map((d) => `${d.name}:${d.state}`), [
    "a:ready",
    "b:ready",
    "dep:notReady",
    "svc:waiting",
    "extra:waiting",
  ]);
  assert.equal(r.condition.status, "False");
  assert.equal(r.condition.message, 'The dependent "dep" (Deployment "d") is not ready');
  assert.ok(!m.store.has("Service/s"));
  assert.equal(m.store.get("ConfigMap/a")?.metadata.labels?.[DEPENDENT_LABEL], "a");
  assert.match(
    m.store.get("ConfigMap/a")?.metadata.labels?.[APPLYSET_PART_OF_LABEL] ?? "",
    /^applyset-/,
  );

  depReady = true;
  r = await g.reconcile(primary, m.ctx);
  assert.equal(r.ready, true);
  assert.equal(r.condition.reason, "DependentsReady");
  assert.ok(m.store.has("Service/s") && m.store.has("Service/x"));

  // svc is no longer desired: it and what depends on it are pruned, dependents first.
  on = false;
  m.log.length = 0;
  r = await g.reconcile(primary, m.ctx);
  assert.equal(r.dependents.svc.state, "pruned");
  assert.equal(r.dependents.extra.state, "pruned");
  assert.deepEqual(m.log.filter((l) => l.startsWith("delete")), [
    "delete Service/x",
    "delete Service/s",
  ]);

  // Ordered deletion: reverse topological order.
  on = true;
  await g.reconcile(primary, m.ctx);
  m.log.length = 0;
  assert.equal(await g.delete(primary, m.ctx), undefined);
  assert.deepEqual(m.log, [
    "delete Service/x",
    "delete Service/s",
    "delete Deployment/d",
    "delete ConfigMap/b",
    "delete ConfigMap/a",
  ]);
});

Deno.test("workflow: a failing dependent is reported, its dependents wait, others go on", async () => {
  const primary = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "p", namespace: "ns", uid: "u1" },
  };
  const g = dependents(Secret, {
    bad: {
      resource: ConfigMap,
      desired: () => {
        throw new Error("No key");
      },
    },
    after: { resource: ConfigMap, dependsOn: ["bad"], desired: () => cm("after") },
    other: { resource: ConfigMap, desired: () => cm("other") },
  });
  const m = memoryContext(primary);
  const r = await g.reconcile(primary, m.ctx);
  assert.equal(r.dependents.bad.state, "failed");
  assert.equal(r.dependents.after.state, "waiting");
  assert.equal(r.dependents.other.state, "ready");
  assert.equal(r.condition.reason, "DependentFailed");
  assert.equal(r.error?.name, "DependentsError");
  assert.match(r.error?.message ?? "", /Cannot reconcile the dependents of "ns\/p": "bad": No key/);
});
