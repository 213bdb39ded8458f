// informer() against a real kube-apiserver + etcd on loopback (one control plane for the
// file): caching and handlers, restarts, compaction and 410 Gone, 10,000 objects in pages,
// persistent errors, throwing handlers, resync, and the shared InformerFactory.
import assert from "node:assert/strict";
import type { ControlPlane } from "../testing.ts";
import { sharedPlane } from "./_plane.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { startFaultProxy } from "../src/testing/fault_proxy.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { InformerFactory } from "../src/runtime/cache/informer_factory.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { CustomResourceDefinition, Role, RoleBinding } from "../src/core/kinds_cluster.ts";
import type { KubeObject } from "../src/core/object.ts";
import { resource } from "../src/core/resource.ts";
import { objectKey } from "../src/core/object_key.ts";
import type { WatchClient } from "../src/runtime/watch/watch.ts";
import { WatchError } from "../src/runtime/watch/watch_error.ts";
import { mapConcurrent, recordingClient, waitFor } from "./_helpers.ts";

let cp: ControlPlane, admin: Client; // the file's one control plane, for every step below
const { step, namespace } = sharedPlane(
  "informer() against a real API server",
  "i",
  (p, c) => [cp, admin] = [p, c],
);

function fingerprint(objs: Iterable<KubeObject>): string[] {
  return [...objs].map((o) => `${objectKey(o)}@${o.metadata.resourceVersion}`).sort();
}

async function freshList(ns: string): Promise<string[]> {
  return fingerprint((await admin.list(ConfigMap, { namespace: ns })).items);
}

/** What the handlers alone tell: must always agree with the store. */
function handlerView<T extends KubeObject>(inf: ReturnType<typeof informer<T>>) {
  const view = new Map<string, T>();
  const deleted: string[] = [];
  const errors: WatchError[] = [];
  inf.addHandler({
    onEvent: ({ type, object: o }) => {
      if (type !== "deleted") return void view.set(objectKey(o), o);
      view.delete(objectKey(o));
      deleted.push(o.metadata.name!);
    },
    onError: (e) => void errors.push(e),
  });
  return { view, deleted, errors };
}

const pace = () => new Promise((r) => setTimeout(r, 20)); // paces the writer; not a wait

step(
  "(a) the store equals a fresh list after kube-apiserver restarts while objects change",
  async () => {
    const ns = await namespace();
    for (let i = 0; i < 20; i++) {
      await admin.create(ConfigMap, {
        metadata: { name: `cm-${i}`, namespace: ns },
        data: { v: "0" },
      });
    }
    await using inf = informer(ConfigMap, {
      client: admin,
      namespace: ns,
      backoff: { initialMs: 200, maxMs: 2_000 },
    }).start();
    const h = handlerView(inf);
    await inf.synced();
    using writer = await createClient({ kubeconfig: cp.kubeconfigPath });
    let ok = 0;
    let stop = false;
    const writing = (async () => {
      for (let i = 0; !stop; i++) {
        const name = `cm-${i % 30}`;
        try {
          if (i % 3 === 0) await writer.delete(ConfigMap, name, { namespace: ns });
          else if (i % 3 === 1) {
            await writer.create(ConfigMap, {
              metadata: { name, namespace: ns },
              data: { v: `${i}` },
            });
          } else await writer.patch(ConfigMap, name, { data: { v: `${i}` } }, { namespace: ns });
          ok++;
        } catch { /* NotFound, AlreadyExists, or the server is down */ }
        await pace();
      }
    })();
    await waitFor(() => ok >= 10, { what: "writes before the restart" });
    await cp.stopApiServer();
    await waitFor(() => inf.error !== undefined, { what: "the informer to notice" });
    assert.equal(inf.health().healthy, false);
    assert.equal(inf.error?.persistent, false);
    await cp.startApiServer();
    const okAfterRestart = ok;
    await waitFor(() => ok >= okAfterRestart + 20, { what: "writes after the restart" });
    stop = true;
    await writing;
    const want = await freshList(ns);
    await waitFor(() => fingerprint(inf.list()).join() === want.join(), {
      what: "the store to equal a fresh list",
    });
    assert.deepEqual(fingerprint(h.view.values()), want, "handlers agree with the store");
    assert.equal(inf.error, undefined);
    assert.ok(inf.health().healthy);
    assert.ok(
      h.errors.length >= 1 && h.errors.length <= 3,
      `errors reported once per state, got ${h.errors.length}`,
    );
    assert.equal(inf.stats?.maxOpenRequests, 1);
    console.log(
      `restart: ${ok} writes, ${inf.stats?.lists} lists, ${inf.stats?.watchRequests} watches, ` +
        `${inf.stats?.failures} failed attempts, ${h.errors.length} error reports`,
    );
  },
);

step(
  "(b) after etcd compaction the resume gets 410 Gone, relists and reports deletions",
  async () => {
    const ns = await namespace();
    for (let i = 0; i < 15; i++) {
      await admin.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } });
    }
    const proxy = await startFaultProxy({ target: cp.server });
    const port = proxy.port;
    using client = await createClient({
      kubeconfig: await cp.writeKubeconfig({ server: proxy.url }),
    });
    await using inf = informer(ConfigMap, {
      client,
      namespace: ns,
      pageSize: 4,
      backoff: { initialMs: 200, maxMs: 1_000 },
    }).start();
    const h = handlerView(inf);
    await inf.synced();
    assert.equal(inf.stats?.lists, 1);
    // Cut the informer off, change things behind its back, and forget the history.
    await proxy.close();
    await waitFor(() => inf.error !== undefined, { what: "the informer to lose its watch" });
    for (let i = 0; i < 5; i++) await admin.delete(ConfigMap, `cm-${i}`, { namespace: ns });
    for (let i = 5; i < 10; i++) {
      await admin.patch(ConfigMap, `cm-${i}`, { data: { changed: "yes" } }, { namespace: ns });
    }
    for (let i = 15; i < 20; i++) {
      await admin.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } });
    }
    await cp.compactEtcd();
    await cp.restartApiServer(); // a fresh watch cache holds no history before the compaction
    await using _reopened = await startFaultProxy({ target: cp.server, port });
    const want = await freshList(ns);
    await waitFor(() => fingerprint(inf.list()).join() === want.join(), {
      what: "the store to equal a fresh list",
    });
    assert.equal(inf.stats?.lists, 2, "relisted once");
    assert.deepEqual(h.deleted.sort(), ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"]);
    assert.deepEqual(fingerprint(h.view.values()), want);
    assert.equal(inf.get({ name: "cm-7", namespace: ns })?.data?.changed, "yes");
  },
);

// The namespace of (d)'s 10,000 ConfigMaps, synced again by (d2).
let tenThousand = "";

step("(d) 10,000 ConfigMaps are listed in pages and all held", async () => {
  const ns = tenThousand = await namespace();
  const n = 10_000;
  let t0 = performance.now();
  await mapConcurrent(Array.from({ length: n }, (_, i) => i), 32, (i) =>
    admin.create(ConfigMap, {
      metadata: {
        name: `cm-${String(i).padStart(5, "0")}`,
        namespace: ns,
        labels: { shard: `${i % 10}` },
      },
      data: { index: String(i) },
    }));
  const createMs = performance.now() - t0;
  const pages: number[] = [];
  const counting: WatchClient = {
    list: (res, options) =>
      admin.list(res, options).then((page) => {
        pages.push(page.items.length);
        return page;
      }),
    watchEvents: (res, options) => admin.watchEvents(res, options),
  };
  t0 = performance.now();
  await using inf = informer(ConfigMap, {
    client: counting,
    namespace: ns,
    initialSync: "list", // paging is what this step tests
    pageSize: 500,
  }).start();
  await inf.synced();
  const syncMs = performance.now() - t0;
  assert.equal(inf.store.size, n);
  assert.equal(pages.length, 20, `pages: ${pages.join()}`);
  assert.ok(pages.every((p) => p <= 500));
  assert.equal(inf.stats?.listRequests, 20);
  assert.equal(inf.list({ labelSelector: "shard=3" }).length, 1_000);
  assert.deepEqual(fingerprint(inf.list()), await freshList(ns));
  console.log(
    `10k: created in ${Math.round(createMs)} ms (32 in flight), informer synced in ${
      Math.round(syncMs)
    } ms ` +
      `over ${pages.length} pages`,
  );
});

step("(d2) the same 10,000 ConfigMaps sync over one watch-list request, no LIST", async () => {
  const ns = tenThousand;
  assert.ok(ns, "(d) created the ConfigMaps");
  const rec = recordingClient(admin);
  const t0 = performance.now();
  await using inf = informer(ConfigMap, {
    client: rec.client,
    namespace: ns,
    initialSync: "watchList",
  }).start();
  await inf.synced();
  const syncMs = performance.now() - t0;
  assert.equal(inf.store.size, 10_000);
  assert.equal(rec.lists.length, 0, "no LIST request");
  assert.equal(rec.watches.length, 1);
  assert.equal(rec.watches[0].options.sendInitialEvents, true);
  assert.equal(inf.stats?.listRequests, 0);
  assert.equal(inf.stats?.watchRequests, 1);
  assert.equal(inf.stats?.lists, 1);
  assert.equal(inf.stats?.initialSync, "watchList");
  assert.ok(rec.watches[0].events >= 10_001, "10,000 objects and the end bookmark");
  assert.equal(inf.list({ labelSelector: "shard=3" }).length, 1_000);
  assert.equal(inf.get({ name: "cm-04242", namespace: ns })?.data?.index, "4242");
  assert.deepEqual(fingerprint(inf.list()), await freshList(ns));
  // The informer goes on watching on the same request.
  await admin.patch(ConfigMap, "cm-00007", { data: { index: "seven" } }, { namespace: ns });
  await waitFor(() => inf.get({ name: "cm-00007", namespace: ns })?.data?.index === "seven", {
    what: "a live change after the watch-list",
  });
  assert.equal(rec.watches.length, 1);
  console.log(`10k: informer synced in ${Math.round(syncMs)} ms over one watch-list request`);
});

step(
  "(e) an unknown resource and a forbidden list are reported, retried, and recover when fixed",
  async () => {
    // Unknown resource: reported with one line, retried until the CRD is installed.
    const Gadget = resource({ group: "example.com", version: "v1", kind: "Gadget" });
    await using gadgets = informer(Gadget, {
      client: admin,
      backoff: { initialMs: 100, maxMs: 500 },
    }).start();
    const g = handlerView(gadgets);
    const err = await gadgets.synced().then(() => undefined, (e) => e);
    assert.ok(err instanceof WatchError);
    assert.equal(err.code, 404);
    assert.equal(err.persistent, true);
    assert.doesNotMatch(err.message, /\n/);
    assert.match(err.message, /gadgets\.example\.com\/v1/);
    console.log(`unknown: ${err.message}`);
    await waitFor(() => (gadgets.stats?.failures ?? 0) >= 3, { what: "retries" });
    assert.equal(g.errors.length, 1, "reported once, not per retry");
    assert.equal(gadgets.error?.code, 404);
    assert.equal(gadgets.health().healthy, false);
    await assert.rejects(gadgets.synced(), WatchError, "synced() rejects while failing");
    await admin.create(CustomResourceDefinition, {
      metadata: { name: "gadgets.example.com" },
      spec: {
        group: "example.com",
        names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
        scope: "Namespaced",
        versions: [{
          name: "v1",
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
          },
        }],
      },
    } as never);
    await waitFor(() => gadgets.hasSynced, { what: "the informer to sync once the CRD exists" });
    assert.equal(gadgets.error, undefined);
    await gadgets.synced();
    assert.ok(gadgets.health().healthy);

    // Forbidden: reported with one line, retried until RBAC allows it.
    const ns = await namespace();
    using bob = await createClient({ kubeconfig: await cp.createUser("bob") });
    await using cms = informer(ConfigMap, {
      client: bob,
      namespace: ns,
      backoff: { initialMs: 100, maxMs: 500 },
    }).start();
    const c = handlerView(cms);
    const denied = await cms.synced().then(() => undefined, (e) => e);
    assert.ok(denied instanceof WatchError);
    assert.equal(denied.code, 403);
    assert.doesNotMatch(denied.message, /\n/);
    assert.match(denied.message, /User "bob" cannot list resource "configmaps"/);
    console.log(`forbidden: ${denied.message}`);
    await admin.create(Role, {
      metadata: { name: "read-cms", namespace: ns },
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] }],
    });
    await admin.create(RoleBinding, {
      metadata: { name: "bob-reads-cms", namespace: ns },
      subjects: [{ kind: "User", name: "bob", apiGroup: "rbac.authorization.k8s.io" }],
      roleRef: { kind: "Role", name: "read-cms", apiGroup: "rbac.authorization.k8s.io" },
    });
    await waitFor(() => cms.hasSynced, { what: "the informer to sync once RBAC allows it" });
    assert.equal(c.errors.length, 1);
    assert.equal(cms.error, undefined);
  },
);

step(
  "(f) caches without managedFields, indexes, and calls handlers after the store changed",
  async () => {
    const ns = await namespace();
    for (const n of ["a", "b"]) {
      await admin.create(ConfigMap, { metadata: { name: n, namespace: ns }, data: { v: n } });
    }
    await using inf = informer(ConfigMap, {
      client: admin,
      namespace: ns,
      indexes: { v: (o) => [o.data?.v ?? ""] },
    });
    const log: string[] = [];
    const seenInHandler: unknown[] = [];
    inf.addHandler({
      onEvent: (ev) =>
        void log.push(
          ev.type === "added"
            ? `add ${ev.object.metadata.name}`
            : ev.type === "modified"
            ? `update ${ev.old?.metadata.name} ${ev.old?.data?.v}->${ev.object.data?.v}`
            : `delete ${ev.object.metadata.name}`,
        ),
    });
    inf.onEvent((ev) =>
      void (ev.type === "modified" && seenInHandler.push(inf.get(objectKey(ev.object))?.data?.v))
    );
    assert.equal(inf.hasSynced, false);
    inf.start();
    inf.start(); // idempotent
    await inf.synced();
    assert.deepEqual(log.sort(), ["add a", "add b"]);
    assert.ok(
      (await admin.get(ConfigMap, "a", { namespace: ns })).metadata.managedFields?.length,
      "the server sends managedFields",
    );
    assert.equal(inf.get({ name: "a", namespace: ns })?.metadata.managedFields, undefined);
    assert.equal(inf.store.byIndex("v", "b").length, 1);
    await waitFor(() => inf.stats?.state === "watching", { what: "the watch" });
    await admin.patch(ConfigMap, "a", { data: { v: "a2" } }, { namespace: ns });
    await admin.delete(ConfigMap, "b", { namespace: ns });
    await admin.create(ConfigMap, { metadata: { name: "c", namespace: ns }, data: { v: "c" } });
    await waitFor(() => log.length === 5, { what: "3 more handler calls" });
    assert.deepEqual(log.slice(2), ["update a a->a2", "delete b", "add c"]);
    assert.deepEqual(seenInHandler, ["a2"], "the store had the new state in the handler");
    assert.deepEqual(inf.store.byIndex("v", "a2").map(objectKey), [`${ns}/a`]);
    assert.deepEqual(fingerprint(inf.list()), await freshList(ns));
    assert.ok(inf.health().healthy);
    assert.ok(inf.lastEventAt !== undefined);
    // A late handler is told about every object held.
    const late: string[] = [];
    inf.onEvent((ev) => void (ev.type === "added" && late.push(ev.object.metadata.name!)));
    assert.deepEqual(late.sort(), ["a", "c"]);
  },
);

step("(g) throwing handlers do not stop it; stop() closes the watch for good", async () => {
  const ns = await namespace();
  await admin.create(ConfigMap, { metadata: { name: "a", namespace: ns } });
  const rec = recordingClient(admin);
  const inf = informer(ConfigMap, { client: rec.client, namespace: ns });
  let calls = 0;
  inf.onEvent(() => {
    calls++;
    throw new Error("boom");
  });
  inf.onEvent(() => Promise.reject(new Error("async boom")));
  const added: string[] = [];
  inf.onEvent((ev) => void (ev.type === "added" && added.push(ev.object.metadata.name!)));
  await inf.start().synced();
  await waitFor(() => rec.openWatches === 1, { what: "the watch" });
  for (const n of ["b", "c"]) {
    await admin.create(ConfigMap, { metadata: { name: n, namespace: ns } });
  }
  await waitFor(() => added.length === 3, { what: "events after the handlers threw" });
  assert.equal(calls, 3);
  assert.equal(inf.error, undefined);
  assert.ok(inf.health().healthy);
  await inf.stop();
  assert.equal(inf.health().state, "stopped");
  assert.equal(inf.stats?.openRequests, 0);
  await waitFor(() => rec.openWatches === 0, { what: "the watch request to be released" });
  assert.throws(() => inf.start(), TypeError);
  assert.equal(rec.watches.length, 1);

  const never = informer(ConfigMap, { client: admin, namespace: ns });
  const waiting = never.synced();
  await never.stop();
  await assert.rejects(
    waiting,
    new RegExp(
      `Cannot wait for informer for ConfigMap \\(v1\\) in namespace "${ns}" to sync: it was stopped`,
    ),
  );
  await assert.rejects(never.synced(), /it was stopped/);
  const ctl = new AbortController();
  const aborted = informer(ConfigMap, { client: admin }).synced({ signal: ctl.signal });
  ctl.abort(new Error("gave up"));
  await assert.rejects(aborted, /gave up/);
});

step("(h) resyncMs hands every object to onEvent again as modified, unchanged", async () => {
  const ns = await namespace();
  await admin.create(ConfigMap, { metadata: { name: "a", namespace: ns } });
  await using inf = informer(ConfigMap, { client: admin, namespace: ns, resyncMs: 300 }).start();
  await inf.synced();
  const resyncs: [KubeObject, KubeObject][] = [];
  inf.onEvent((ev) => void (ev.type === "modified" && resyncs.push([ev.old!, ev.object])));
  await waitFor(() => resyncs.length >= 2, { what: "two resyncs" });
  const rv = inf.get({ name: "a", namespace: ns })?.metadata.resourceVersion;
  for (const [a, b] of resyncs) {
    assert.equal(a, b);
    assert.equal(a.metadata.resourceVersion, rv);
  }
  assert.equal(inf.stats?.lists, 1, "a resync is not a relist");
});

step("(i) InformerFactory shares one informer and one watch per kind and query", async () => {
  const x = await namespace();
  const y = await namespace();
  await admin.create(ConfigMap, { metadata: { name: "a", namespace: x }, data: { v: "a" } });
  await admin.create(ConfigMap, { metadata: { name: "b", namespace: y }, data: { v: "b" } });
  const rec = recordingClient(admin);
  const informers = new InformerFactory({ client: rec.client });
  const a = informers.for(ConfigMap, { namespace: x });
  const b = informers.for(ConfigMap, { namespace: x, indexes: { v: (o) => [o.data?.v ?? ""] } });
  const sel = informers.for(ConfigMap, { fieldSelector: `metadata.namespace=${y}` });
  assert.equal(a, b);
  assert.notEqual(a, sel);
  assert.equal(informers.size, 2);
  informers.start();
  await informers.synced();
  const late = informers.for(ConfigMap, { namespace: y });
  assert.equal(informers.for(ConfigMap, { namespace: y }), late);
  await late.synced();
  await waitFor(() => rec.openWatches === 3, { what: "3 watches" });
  assert.equal(rec.watches.length, 3, "one watch per query");
  assert.deepEqual(
    rec.watches.map((w) => `${w.options.namespace ?? ""}|${w.options.fieldSelector ?? ""}`).sort(),
    [`${x}|`, `${y}|`, `|metadata.namespace=${y}`].sort(),
  );
  assert.deepEqual(a.store.byIndex("v", "a").map(objectKey), [`${x}/a`]);
  assert.deepEqual(sel.list().map(objectKey), [`${y}/b`]);
  assert.deepEqual(late.list().map(objectKey), [`${y}/b`]);
  await informers.stop();
  await waitFor(() => rec.openWatches === 0, { what: "every watch request to be released" });
  assert.throws(() => informers.for(ConfigMap), TypeError);
});
