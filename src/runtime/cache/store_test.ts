import assert from "node:assert/strict";
import { objectKey } from "../../core/object_key.ts";
import { Store } from "./store.ts";
import type { KubeObject } from "../../core/object.ts";

function cm(
  name: string,
  namespace: string | undefined,
  rv = "1",
  labels?: Record<string, string>,
) {
  return { metadata: { name, namespace, resourceVersion: rv, labels } } satisfies KubeObject;
}

Deno.test("objectKey() joins namespace and name", () => {
  assert.equal(objectKey(cm("a", "ns")), "ns/a");
  assert.equal(objectKey(cm("a", undefined)), "a");
  assert.equal(objectKey({ name: "a", namespace: "" }), "a");
  assert.throws(() => objectKey({ metadata: {} }), TypeError);
});

Deno.test("Store get/has/upsert/delete by key and by name", () => {
  const s = new Store<KubeObject>();
  assert.equal(s.upsert(cm("a", "ns", "1")), undefined);
  const old = s.upsert(cm("a", "ns", "2"));
  assert.equal(old?.metadata.resourceVersion, "1");
  assert.equal(s.size, 1);
  assert.equal(s.get("ns/a")?.metadata.resourceVersion, "2");
  assert.equal(s.get({ name: "a", namespace: "ns" })?.metadata.resourceVersion, "2");
  assert.ok(s.has({ name: "a", namespace: "ns" }));
  assert.equal(s.get({ name: "a" }), undefined);
  assert.equal(s.resourceVersion, "2");
  assert.equal(s.delete(cm("a", "ns", "3"))?.metadata.resourceVersion, "2");
  assert.equal(s.resourceVersion, "3");
  assert.equal(s.delete("ns/a"), undefined);
  assert.equal(s.size, 0);
  assert.deepEqual(s.list({ namespace: "ns" }), []);
});

Deno.test("Store list() filters by namespace index and label selector", () => {
  const s = new Store<KubeObject>();
  s.upsert(cm("a", "x", "1", { app: "web", tier: "fe" }));
  s.upsert(cm("b", "x", "1", { app: "db" }));
  s.upsert(cm("c", "y", "1", { app: "web" }));
  s.upsert(cm("node", undefined, "1"));
  const names = (objs: KubeObject[]) => objs.map((o) => o.metadata.name).sort();
  assert.deepEqual(names(s.list()), ["a", "b", "c", "node"]);
  assert.deepEqual(names(s.list({ namespace: "x" })), ["a", "b"]);
  assert.deepEqual(names(s.list({ namespace: "" })), ["node"]);
  assert.deepEqual(names(s.list({ labelSelector: "app=web" })), ["a", "c"]);
  assert.deepEqual(names(s.list({ labelSelector: { app: "web" }, namespace: "y" })), ["c"]);
  assert.deepEqual(names(s.list({ labelSelector: "app in (web, db),!tier" })), ["b", "c"]);
  assert.deepEqual(names(s.list({ labelSelector: "app notin (web)" })), ["b", "node"]);
  assert.deepEqual(names(s.list({ labelSelector: "app!=web" })), ["b", "node"]);
  assert.deepEqual(names(s.list({ labelSelector: "tier" })), ["a"]);
  assert.deepEqual(names(s.list({ labelSelector: "app==db" })), ["b"]);
  assert.throws(() => s.list({ labelSelector: "app in web" }), /Cannot parse label selector/);
  // Moving an object between namespaces is not possible (the key changes), but relabeling is.
  s.upsert(cm("a", "x", "2", { app: "db" }));
  assert.deepEqual(names(s.list({ labelSelector: "app=db" })), ["a", "b"]);
});

Deno.test("Store user indexes follow updates and deletes", () => {
  type Obj = KubeObject & { spec: { nodes: string[] } };
  const s = new Store<Obj>({ indexes: { node: (o) => o.spec.nodes } });
  const o = (name: string, nodes: string[]): Obj => ({
    metadata: { name, namespace: "n" },
    spec: { nodes },
  });
  s.upsert(o("a", ["n1", "n2"]));
  s.upsert(o("b", ["n2"]));
  assert.deepEqual(s.byIndex("node", "n2").map((x) => x.metadata.name).sort(), ["a", "b"]);
  s.upsert(o("a", ["n3"]));
  assert.deepEqual(s.byIndex("node", "n2").map((x) => x.metadata.name), ["b"]);
  assert.deepEqual(s.indexValues("node").sort(), ["n2", "n3"]);
  s.delete("n/b");
  assert.deepEqual(s.byIndex("node", "n2"), []);
  assert.deepEqual(s.indexValues("node"), ["n3"]);
  // An index added later covers what is already held.
  s.addIndex("name", (x) => [x.metadata.name!]);
  assert.ok(s.hasIndex("name"));
  assert.equal(s.byIndex("name", "a").length, 1);
  assert.throws(() => s.addIndex("name", () => []), TypeError);
  assert.throws(() => s.byIndex("nope", "x"), RangeError);
  assert.throws(() => s.indexValues("nope"), RangeError);
});

Deno.test("Store replace() reports added, updated and deleted and resets indexes", () => {
  const s = new Store<KubeObject>({ indexes: { app: (o) => [o.metadata.labels?.app ?? ""] } });
  s.replace([cm("a", "x", "1", { app: "1" }), cm("b", "x", "1"), cm("c", "y", "1")], "10");
  const changes = s.replace(
    [cm("b", "x", "1"), cm("c", "y", "5", { app: "2" }), cm("d", "y", "6")],
    "20",
  );
  assert.deepEqual(changes.added.map(objectKey), ["y/d"]);
  assert.deepEqual(
    changes.updated.map((u) => [u.old.metadata.resourceVersion, u.new.metadata.resourceVersion]),
    [["1", "5"]],
  );
  assert.deepEqual(changes.deleted.map(objectKey), ["x/a"]);
  assert.equal(s.resourceVersion, "20");
  assert.deepEqual(s.keys().sort(), ["x/b", "y/c", "y/d"]);
  assert.deepEqual(s.byIndex("app", "1"), []);
  assert.deepEqual(s.byIndex("app", "2").map(objectKey), ["y/c"]);
  assert.deepEqual(s.list({ namespace: "x" }).map(objectKey), ["x/b"]);
  assert.deepEqual([...s].length, 3);
  const empty = s.replace([], "30");
  assert.equal(empty.deleted.length, 3);
  assert.equal(s.size, 0);
  assert.deepEqual(s.indexValues("app"), []);
});

Deno.test("Store replace() diffs 10,000 objects", () => {
  const s = new Store<KubeObject>();
  const items = Array.from({ length: 10_000 }, (_, i) => cm(`cm-${i}`, `ns-${i % 10}`, "1"));
  s.replace(items, "1");
  const next = items.map((o, i) => (i % 2 ? cm(o.metadata.name, o.metadata.namespace, "2") : o));
  const changes = s.replace(next.slice(0, 9_000), "2");
  assert.equal(changes.updated.length, 4_500);
  assert.equal(changes.deleted.length, 1_000);
  assert.equal(s.list({ namespace: "ns-3" }).length, 900);
});

Deno.test("Store writes are all or nothing when an index function throws", () => {
  const bad = (o: KubeObject) => {
    if (o.metadata.labels?.bad) throw new Error(`bad ${o.metadata.name}`);
    return [o.metadata.labels?.app ?? ""];
  };
  const s = new Store<KubeObject>({ indexes: { app: bad } });
  const a = cm("a", "x", "1", { app: "1" });
  const b = cm("b", "x", "1");
  s.replace([a, b], "1");
  // upsert throws and leaves the store as it was.
  const badA = {
    metadata: { name: "a", namespace: "x", resourceVersion: "2", labels: { bad: "y" } },
  };
  assert.throws(() => s.upsert(badA), /bad a/);
  assert.equal(s.get("x/a"), a);
  assert.deepEqual(s.byIndex("app", "1").map(objectKey), ["x/a"]);
  // replace keeps the previous version of the rejected object and applies the rest.
  const newC = cm("c", "x", "3");
  const changes = s.replace([badA, newC, { metadata: {} } as KubeObject], "3");
  assert.deepEqual(changes.rejected.map((r) => r.object.metadata.name), ["a", undefined]);
  assert.deepEqual(changes.deleted.map(objectKey), ["x/b"]);
  assert.deepEqual(changes.added.map(objectKey), ["x/c"]);
  assert.equal(s.get("x/a"), a, "the previous version is kept");
  assert.deepEqual(s.keys().sort(), ["x/a", "x/c"]);
  assert.deepEqual(s.byIndex("app", "1").map(objectKey), ["x/a"]);
  // Unindexing uses the values computed at insertion, even if the function changed its mind.
  let flip = false;
  const t = new Store<KubeObject>({ indexes: { v: (o) => [flip ? "later" : o.metadata.name!] } });
  t.upsert(cm("p", "x", "1"));
  flip = true;
  t.delete("x/p");
  assert.deepEqual(t.indexValues("v"), []);
});
