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
const primary = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "p", namespace: "ns", uid: "u1" },
};

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
    signal: new AbortController().signal,
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

const dataOf = (m: { store: Map<string, KubeObject> }, key: string) =>
  (m.store.get(key) as ConfigMap | undefined)?.data;

const sha256 = async (text: string) =>
  Array.from(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");

Deno.test("desired: async, its promise awaited before the apply; undefined prunes", async () => {
  let html = "<h1>a</h1>";
  let on = true;
  const g = dependents(Secret, {
    config: {
      resource: ConfigMap,
      async desired() {
        await new Promise((r) => setTimeout(r, 5));
        return on ? { metadata: { name: "c" }, data: { hash: await sha256(html) } } : undefined;
      },
    },
    after: { resource: ConfigMap, dependsOn: ["config"], desired: () => cm("after") },
  });
  const m = memoryContext(primary);
  let r = await g.reconcile(primary, m.ctx);
  assert.equal(r.dependents.config.state, "ready");
  assert.equal(dataOf(m, "ConfigMap/c")?.hash, await sha256("<h1>a</h1>"));
  assert.equal(r.dependents.after.state, "ready");
  html = "<h1>b</h1>";
  await g.reconcile(primary, m.ctx);
  assert.equal(dataOf(m, "ConfigMap/c")?.hash, await sha256("<h1>b</h1>"));
  on = false; // an async undefined is absent: it and what depends on it are pruned
  r = await g.reconcile(primary, m.ctx);
  assert.deepEqual([r.dependents.config.state, r.dependents.after.state], ["pruned", "pruned"]);

  const failing = dependents(Secret, {
    bad: { resource: ConfigMap, desired: () => Promise.reject(new Error("No html")) },
  });
  const f = await failing.reconcile(primary, memoryContext(primary).ctx);
  assert.equal(f.dependents.bad.state, "failed");
  assert.match(f.error?.message ?? "", /"bad": No html/);
});

Deno.test("desired: reads another object from ctx.cache", async () => {
  const g = dependents(Secret, {
    copy: {
      resource: ConfigMap,
      desired: (_p, ctx) => {
        const source = ctx.cache.get(ConfigMap, "settings", { namespace: "ns" });
        return source ? { metadata: { name: "copy" }, data: { ...source.data } } : undefined;
      },
    },
  });
  const m = memoryContext(primary);
  let r = await g.reconcile(primary, m.ctx);
  assert.equal(r.dependents.copy.state, "absent", "no settings in the cache yet");
  m.store.set("ConfigMap/settings", {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "settings", namespace: "ns" },
    data: { mode: "fast" },
  } as KubeObject);
  r = await g.reconcile(primary, m.ctx);
  assert.equal(r.dependents.copy.state, "ready");
  assert.deepEqual(dataOf(m, "ConfigMap/copy"), { mode: "fast" });
});

Deno.test("desired: sees the dependents resolved before it in the same reconcile", async () => {
  let html = "<h1>a</h1>";
  let configReady = true;
  const seen: Record<string, string[]> = {};
  const g = dependents(Secret, {
    config: {
      resource: ConfigMap,
      desired: () => ({ metadata: { name: "c" }, data: { "index.html": html } }),
      ready: () => configReady,
    },
    other: { resource: ConfigMap, desired: () => cm("other") },
    web: {
      resource: Deployment,
      dependsOn: ["config"],
      async desired(_p, ctx) {
        const config = ctx.dependents.config as ConfigMap | undefined;
        const hash = await sha256(config?.data?.["index.html"] ?? "");
        return {
          metadata: { name: "web" },
          spec: {
            selector: { matchLabels: { app: "web" } },
            template: {
              metadata: { labels: { app: "web" }, annotations: { "config-hash": hash } },
            },
          },
        };
      },
      ready: () => true,
    },
    svc: {
      resource: Service,
      dependsOn: ["web"],
      desired: (_p, ctx) => {
        seen.svc = Object.keys(ctx.dependents).sort();
        return cm("svc");
      },
      ready: () => true,
    },
  });
  const m = memoryContext(primary);
  const hashOf = () =>
    (m.store.get("Deployment/web") as Deployment | undefined)?.spec?.template.metadata
      ?.annotations?.["config-hash"];
  await g.reconcile(primary, m.ctx);
  assert.equal(hashOf(), await sha256("<h1>a</h1>"));
  assert.deepEqual(seen.svc, ["config", "web"], "transitive dependencies, not other branches");

  // The input changes: the same reconcile applies the ConfigMap, then the template follows.
  html = "<h1>b</h1>";
  await g.reconcile(primary, m.ctx);
  assert.equal(hashOf(), await sha256("<h1>b</h1>"));

  // A dependency not ready is passed as the cache holds it; the dependent waits.
  configReady = false;
  html = "<h1>c</h1>";
  const r = await g.reconcile(primary, m.ctx);
  assert.equal(r.dependents.web.state, "waiting");
  assert.equal(hashOf(), await sha256("<h1>b</h1>"), "not applied while waiting");
});
