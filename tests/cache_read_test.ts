// Reads from the cache against a real kube-apiserver: steady reconciles that read a
// referenced ConfigMap and an owned Deployment through ctx.cache send no GET or LIST (counted
// by the API server's own apiserver_request_total); an index-backed map function re-queues
// exactly the primaries that reference an edited ConfigMap; a reconcile that mutates its
// object still gets its status written and cannot change the cache; a label-scoped cache
// holds only matching objects; an operator whose kinds are all namespace-scoped runs on a
// namespaced Role alone; a metadata-only informer holds no data; an undeclared kind fails
// with one line naming `reads`. One control plane for the file.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import type { ControlPlane } from "../src/testing/control_plane.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { ConfigMap, Secret } from "../src/core/kinds.ts";
import { Deployment } from "../src/core/kinds_workloads.ts";
import { Role, RoleBinding } from "../src/core/kinds_cluster.ts";
import { metadataOnly } from "../src/core/metadata_only.ts";
import { objectKey } from "../src/core/object_key.ts";
import { createManager, type ManagerOptions } from "../src/runtime/manager/manager.ts";
import { type Controller, reconcile, requeue } from "../src/runtime/controller/reconcile.ts";
import { ControllerRuntime } from "../src/runtime/controller/pipeline/runner.ts";
import { InformerFactory } from "../src/runtime/cache/informer_factory.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { deriveRbac } from "../src/deploy/rbac.ts";
import { operatorManifests } from "../src/deploy/manifests.ts";
import { uniqueName, waitFor } from "./_helpers.ts";
import { createNamespace, installStack, Stack } from "./_stack.ts";

type StackObj = ReturnType<typeof Stack.parse>;

/** Starts a manager; returns it and a function that stops it. */
function run(client: Client, options: Omit<ManagerOptions, "client">) {
  const stop = new AbortController();
  const manager = createManager({ client, ...options });
  const done = manager.start(stop.signal);
  return {
    manager,
    async stop() {
      stop.abort();
      await done;
    },
  };
}

/** apiserver_request_total summed by `VERB resource` for the given resources. */
async function requestCounts(cp: ControlPlane, resources: string[]) {
  const res = await cp.request("GET", "/metrics");
  const out: Record<string, number> = {};
  for (const line of String(res.body).split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const label = (k: string) => line.match(new RegExp(`[{,]${k}="([^"]*)"`))?.[1] ?? "";
    const resource = label("resource");
    if (!resources.includes(resource)) continue;
    const sub = label("subresource");
    const key = `${label("verb")} ${resource}${sub ? `/${sub}` : ""}`;
    out[key] = (out[key] ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return out;
}

function delta(after: Record<string, number>, before: Record<string, number>) {
  return Object.fromEntries(
    Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => v !== 0),
  ) as Record<string, number>;
}

const stack = (name: string, namespace: string, value: string) => ({
  metadata: { name, namespace },
  spec: { value },
});

Deno.test("reading from the cache against a real API server", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  await installStack(client);

  await t.step(
    "(a) 200 steady reconciles reading a ConfigMap and an owned Deployment: zero GET/LIST",
    async () => {
      const ns = await createNamespace(client, uniqueName("steady"));
      await client.create(ConfigMap, {
        metadata: { name: "cfg", namespace: ns },
        data: { v: "1" },
      });
      await client.create(Stack, stack("site", ns, "cfg"));
      let steady = 0;
      let window: { from: number } | undefined;
      const WINDOW = 200;
      const controller = reconcile(Stack, {
        name: "steady",
        owns: [Deployment],
        reads: [ConfigMap],
        async reconcile(s, ctx) {
          const cm = ctx.cache.get(ConfigMap, s.spec.value);
          const labels = { app: s.metadata.name! };
          await ctx.apply(Deployment, {
            metadata: { name: s.metadata.name! },
            spec: {
              selector: { matchLabels: labels },
              template: {
                metadata: { labels },
                spec: { containers: [{ name: "app", image: `app:${cm?.data?.v ?? "none"}` }] },
              },
            },
          });
          const dep = ctx.cache.get(Deployment, s.metadata.name!);
          const observed = `${cm?.data?.v}/${dep?.spec?.template?.spec?.containers?.[0]?.image}`;
          await ctx.patchStatus(s, { observed });
          if (dep && s.status?.observed === observed) steady++;
          if (window && steady - window.from >= WINDOW) return undefined;
          return requeue(1);
        },
      });
      const m = run(client, { controllers: [controller], namespaces: [ns] });
      try {
        await waitFor(() => steady >= 1, { what: "the first steady reconcile", timeoutMs: 60_000 });
        const resources = ["configmaps", "deployments", "stacks"];
        const before = await requestCounts(cp, resources);
        window = { from: steady };
        await waitFor(() => steady - window!.from >= WINDOW, {
          what: `${WINDOW} steady reconciles`,
          timeoutMs: 120_000,
        });
        const reconciles = steady - window.from;
        const after = await requestCounts(cp, resources);
        const d = delta(after, before);
        console.log(
          `(a) ${reconciles} steady reconciles; API requests in the window: ${JSON.stringify(d)}`,
        );
        const reads = Object.entries(d).filter(([k]) => /^(GET|LIST) /.test(k));
        assert.deepEqual(reads, [], "no GET or LIST during steady reconciles");
        assert.ok(reconciles >= WINDOW);
        assert.ok(
          Object.keys(d).every((k) => /^(WATCH|APPLY|PATCH) /.test(k)),
          `only watches and writes: ${JSON.stringify(d)}`,
        );
      } finally {
        await m.stop();
      }
    },
  );

  await t.step(
    "(b) an index-backed map function re-queues exactly the primaries referencing a ConfigMap",
    async () => {
      const ns = await createNamespace(client, uniqueName("index"));
      for (const cm of ["cm1", "cm2"]) {
        await client.create(ConfigMap, { metadata: { name: cm, namespace: ns }, data: { v: "0" } });
      }
      for (const [name, cm] of [["a", "cm1"], ["b", "cm1"], ["c", "cm2"]]) {
        await client.create(Stack, stack(name, ns, cm));
      }
      const counts = new Map<string, number>();
      const mapped: { configMap: string; primaries: string[] }[] = [];
      let active = 0;
      const controller = reconcile(Stack, {
        name: "by-configmap",
        primary: {
          indexes: {
            byConfigMap: (s) => [
              objectKey({ namespace: s.metadata.namespace, name: s.spec.value }),
            ],
          },
        },
        watches: [{
          resource: ConfigMap,
          map(cm, cache) {
            const primaries = cache.list(Stack, { index: { byConfigMap: objectKey(cm) } });
            mapped.push({
              configMap: cm.metadata.name!,
              primaries: primaries.map(objectKey).sort(),
            });
            return primaries;
          },
        }],
        reconcile(s) {
          counts.set(s.metadata.name!, (counts.get(s.metadata.name!) ?? 0) + 1);
        },
      });
      await using informers = new InformerFactory({ client });
      const runtime = new ControllerRuntime(controller, {
        client,
        informers,
        namespaces: [ns],
        metrics: { activeWorkers: (_, n) => void (active = n) },
      });
      const idle = () => runtime.queue.len() === 0 && active === 0;
      informers.start();
      await runtime.start();
      try {
        await waitFor(() => ["a", "b", "c"].every((n) => counts.get(n)) && idle(), {
          what: "a, b and c to be reconciled",
        });
        const before = new Map(counts);
        mapped.length = 0;
        await client.patch(ConfigMap, "cm1", { data: { v: "1" } }, { namespace: ns });
        await waitFor(
          () =>
            counts.get("a")! > before.get("a")! && counts.get("b")! > before.get("b")! && idle(),
          { what: "a and b to be re-queued by the cm1 edit" },
        );
        assert.deepEqual(
          Object.fromEntries(counts),
          { a: before.get("a")! + 1, b: before.get("b")! + 1, c: before.get("c")! },
          "a and b once more, c not",
        );
        const cm1 = mapped.filter((x) => x.configMap === "cm1");
        assert.ok(cm1.length > 0, "the map function ran for cm1");
        for (const x of cm1) assert.deepEqual(x.primaries, [`${ns}/a`, `${ns}/b`]);
        assert.deepEqual(mapped.filter((x) => x.configMap !== "cm1"), []);
      } finally {
        await runtime.stop(10_000);
      }
    },
  );

  await t.step(
    "(c) a reconcile that mutates its object gets its status written; the cache is untouched",
    async () => {
      const ns = await createNamespace(client, uniqueName("mutate"));
      await client.create(ConfigMap, {
        metadata: { name: "cfg", namespace: ns },
        data: { v: "x" },
      });
      await client.create(Stack, stack("m", ns, "cfg"));
      const seen: {
        cachedAfterMutation?: string;
        frozen?: boolean;
        configMapWrite?: string;
        configMapAfter?: string;
      } = {};
      const controller = reconcile(Stack, {
        name: "mutator",
        reads: [ConfigMap],
        async reconcile(s, ctx) {
          // The pattern that used to lose the write: change the object, then ask for the
          // same value to be written.
          (s as StackObj).status ??= {};
          s.status!.observed = "Running";
          const cached = ctx.cache.get(Stack, s.metadata.name!);
          seen.cachedAfterMutation ??= cached?.status?.observed ?? "(unset)";
          seen.frozen ??= Object.isFrozen(cached) && Object.isFrozen(cached?.metadata);
          const cm = ctx.cache.get(ConfigMap, "cfg")!;
          try {
            (cm.data as Record<string, string>).v = "changed";
          } catch (e) {
            seen.configMapWrite ??= (e as Error).name;
          }
          seen.configMapAfter ??= ctx.cache.get(ConfigMap, "cfg")?.data?.v;
          await ctx.patchStatus(s, { observed: "Running" });
        },
      });
      const m = run(client, { controllers: [controller], namespaces: [ns] });
      try {
        const got = await waitFor(async () => {
          const s = await client.get(Stack, "m", { namespace: ns });
          return s.status?.observed === "Running" && s;
        }, { what: "the status the reconcile wanted to be written" });
        assert.equal(got.status?.observed, "Running");
        assert.equal(seen.cachedAfterMutation, "(unset)", "mutating obj did not change the cache");
        assert.equal(seen.frozen, true, "cached objects are frozen");
        assert.equal(seen.configMapWrite, "TypeError", "writing to a cached object throws");
        assert.equal(seen.configMapAfter, "x", "the cached ConfigMap kept its data");
      } finally {
        await m.stop();
      }
    },
  );

  await t.step("(d) a label-selector-scoped cache holds only matching objects", async () => {
    const ns = await createNamespace(client, uniqueName("labels"));
    for (let i = 0; i < 5; i++) {
      await client.create(ConfigMap, {
        metadata: {
          name: `cm-${i}`,
          namespace: ns,
          ...(i < 3 ? { labels: { "cache.kubeno.dev/managed": "yes" } } : {}),
        },
        data: { i: String(i) },
      });
    }
    await client.create(Stack, stack("l", ns, ""));
    let listed: string[] | undefined;
    const controller = reconcile(Stack, {
      name: "labelled",
      owns: [{ resource: ConfigMap, labelSelector: "cache.kubeno.dev/managed=yes" }],
      reconcile(_s, ctx) {
        listed = ctx.cache.list(ConfigMap, { namespace: ns }).map((c) => c.metadata.name!).sort();
      },
    });
    const m = run(client, { controllers: [controller], namespaces: [ns] });
    try {
      await waitFor(() => listed, { what: "a reconcile" });
      assert.deepEqual(listed, ["cm-0", "cm-1", "cm-2"]);
      const inf = [...m.manager.informers!.all()].find((i) => i.resource.kind === "ConfigMap")!;
      assert.deepEqual(inf.list().map((c) => c.metadata.name).sort(), ["cm-0", "cm-1", "cm-2"]);
    } finally {
      await m.stop();
    }
  });

  await t.step(
    "(d) kinds all cached in one namespace: a namespaced Role, nothing cluster-wide",
    async () => {
      const ns = await createNamespace(client, uniqueName("scoped"));
      await client.create(Secret, {
        metadata: { name: "token", namespace: ns },
        stringData: { v: "s3cret" },
      } as Secret);
      await client.create(Stack, stack("r", ns, "token"));
      const controller = reconcile(Stack, {
        name: "scoped",
        primary: { namespaces: [ns] },
        owns: [{ resource: ConfigMap, namespaces: [ns] }],
        reads: [{ resource: Secret, namespaces: [ns] }],
        async reconcile(s, ctx) {
          const secret = ctx.cache.get(Secret, s.spec.value);
          const v = secret?.data?.v ? atob(secret.data.v) : "missing";
          await ctx.apply(ConfigMap, { metadata: { name: `${s.metadata.name}-out` }, data: { v } });
          await ctx.patchStatus(s, { observed: v });
        },
      });
      const rbac = deriveRbac([controller]);
      assert.deepEqual(rbac.cluster, [], "no ClusterRole rules");
      assert.deepEqual(rbac.namespaced, []);
      assert.deepEqual(Object.keys(rbac.inNamespaces), [ns]);
      const manifests = operatorManifests({
        name: "scoped-operator",
        version: "0.0.0",
        controllers: [controller],
        crds: [],
        namespace: "scoped-system",
        image: "scoped:0",
      });
      const roles = manifests.rbac.filter((o) => o.kind === "Role" && o.metadata.namespace === ns);
      assert.equal(roles.length, 1, "one Role in the namespace");
      assert.ok(
        !manifests.rbac.some((o) =>
          o.kind === "ClusterRole" && o.metadata.name === "scoped-operator"
        ),
        "no ClusterRole for the controllers' kinds",
      );
      // The operator's identity gets that Role and nothing else.
      const user = "scoped-operator";
      await client.create(Role, {
        metadata: { name: user, namespace: ns },
        rules: rbac.inNamespaces[ns],
      } as Role);
      await client.create(RoleBinding, {
        metadata: { name: user, namespace: ns },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: user },
        subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: user }],
      } as RoleBinding);
      using asOperator = await createClient({
        kubeconfig: await cp.createUser(user),
        fieldManager: user,
      });
      const denied = await asOperator.list(ConfigMap).catch((e) => e);
      assert.equal(denied?.code, 403, "the identity cannot list ConfigMaps cluster-wide");
      const m = run(asOperator, { controllers: [controller] });
      try {
        const s = await waitFor(async () => {
          const s = await client.get(Stack, "r", { namespace: ns });
          return s.status?.observed === "s3cret" && s;
        }, { what: "the scoped operator to reconcile", timeoutMs: 60_000 });
        assert.equal(s.status?.observed, "s3cret");
        const out = await client.get(ConfigMap, "r-out", { namespace: ns });
        assert.equal(out.data?.v, "s3cret");
        assert.equal(m.manager.healthy(), true);
        assert.ok(m.manager.health().informers.every((i) => !i.health.error));
      } finally {
        await m.stop();
      }
    },
  );

  await t.step("(e) a metadata-only informer's objects carry no data", async () => {
    const ns = await createNamespace(client, uniqueName("meta"));
    await client.create(ConfigMap, {
      metadata: { name: "big", namespace: ns, labels: { size: "big" } },
      data: { blob: "x".repeat(10_000) },
    });
    await using full = informer(ConfigMap, { client, namespace: ns }).start();
    await using meta = informer(metadataOnly(ConfigMap), { client, namespace: ns }).start();
    await Promise.all([full.synced(), meta.synced()]);
    const f = full.get({ namespace: ns, name: "big" })!;
    const o = meta.get({ namespace: ns, name: "big" })!;
    assert.equal(f.data?.blob.length, 10_000);
    assert.deepEqual(Object.keys(o).sort(), ["apiVersion", "kind", "metadata"]);
    assert.equal(o.kind, "ConfigMap");
    assert.equal(o.apiVersion, "v1");
    assert.equal(o.metadata.labels?.size, "big");
    assert.equal(o.metadata.uid, f.metadata.uid);
    await client.patch(ConfigMap, "big", {
      metadata: { labels: { size: "bigger" } },
      data: { blob: "y" },
    }, { namespace: ns });
    const o2 = await waitFor(() => {
      const x = meta.get({ namespace: ns, name: "big" });
      return x?.metadata.labels?.size === "bigger" && x;
    }, { what: "the watch event to reach the metadata-only informer" });
    assert.deepEqual(Object.keys(o2).sort(), ["apiVersion", "kind", "metadata"]);
    const sizes = [JSON.stringify(f).length, JSON.stringify(o).length];
    console.log(
      `(e) cached JSON bytes of one 10 KB ConfigMap: full ${sizes[0]}, metadata ${sizes[1]}`,
    );
    const one = await client.get(metadataOnly(ConfigMap), "big", { namespace: ns });
    assert.equal("data" in one, false, "a metadata-only get carries no data");
  });

  await t.step("(e) a controller reads a metadata-only kind from its cache", async () => {
    const ns = await createNamespace(client, uniqueName("metactl"));
    await client.create(ConfigMap, {
      metadata: { name: "c1", namespace: ns, annotations: { note: "hi" } },
      data: { secret: "payload" },
    });
    await client.create(Stack, stack("s", ns, "c1"));
    const seen: { keys?: string[]; note?: string; full?: string } = {};
    const ConfigMapMeta = metadataOnly(ConfigMap);
    const controller = reconcile(Stack, {
      name: "meta-reader",
      reads: [ConfigMapMeta],
      reconcile(s, ctx) {
        const cm = ctx.cache.get(ConfigMapMeta, s.spec.value);
        seen.keys = cm ? Object.keys(cm).sort() : [];
        seen.note = cm?.metadata.annotations?.note;
        try {
          ctx.cache.get(ConfigMap, s.spec.value);
        } catch (e) {
          seen.full = (e as Error).message;
        }
      },
    });
    const m = run(client, { controllers: [controller], namespaces: [ns] });
    try {
      await waitFor(() => seen.full, { what: "a reconcile" });
      assert.deepEqual(seen.keys, ["apiVersion", "kind", "metadata"]);
      assert.equal(seen.note, "hi");
      assert.match(seen.full!, /cached metadata-only; read metadataOnly\(ConfigMap\)/);
    } finally {
      await m.stop();
    }
  });

  await t.step("reading an undeclared kind fails with one line naming reads", async () => {
    const ns = await createNamespace(client, uniqueName("undeclared"));
    await client.create(Stack, stack("u", ns, ""));
    let error: Error | undefined;
    const controller: Controller<StackObj> = reconcile(Stack, {
      name: "undeclared",
      reconcile(s, ctx) {
        try {
          ctx.cache.get(Secret, "anything");
        } catch (e) {
          error ??= e as Error;
        }
        void s;
      },
    });
    const m = run(client, { controllers: [controller], namespaces: [ns] });
    try {
      await waitFor(() => error, { what: "a reconcile" });
      assert.ok(error instanceof TypeError);
      assert.equal(error.message.includes("\n"), false, "one line");
      assert.equal(
        error.message,
        `Cannot read Secret (v1) from the cache of controller "undeclared": it is not declared; add it to reads: [Secret] (or to owns or watches), or read it uncached through ctx.client`,
      );
    } finally {
      await m.stop();
    }
  });
});
