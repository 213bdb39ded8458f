import assert from "node:assert/strict";
import type { KubeObject } from "../../../core/object.ts";
import { resource } from "../../../core/resource.ts";
import type { CacheReader } from "../../cache/reader.ts";
import type { ObjectEvent } from "../../watch/watch.ts";
import { mappedKeys, ownerKeys, passes, selfKey } from "./sources.ts";

const App = resource({ group: "apps.kubeno.dev", version: "v1", kind: "Myapp" });
const ClusterApp = resource({
  group: "apps.kubeno.dev",
  version: "v1",
  kind: "Myapp",
  namespaced: false,
});
const cache = {} as CacheReader;

function owned(name: string, owner?: { apiVersion: string; kind: string; name: string }) {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name,
      namespace: "prod",
      ownerReferences: owner ? [{ ...owner, uid: `u-${owner.name}`, controller: true }] : [],
    },
  } as KubeObject;
}

Deno.test("selfKey is the object's own key", () => {
  const ev: ObjectEvent<KubeObject> = {
    type: "added",
    object: { metadata: { name: "web", namespace: "prod" } },
  };
  assert.equal(selfKey(ev), "prod/web");
  assert.equal(selfKey({ type: "deleted", object: { metadata: { name: "n1" } } }), "n1");
});

Deno.test("ownerKeys queues the controller owner before and after a change", () => {
  const a = { apiVersion: "apps.kubeno.dev/v1", kind: "Myapp", name: "a" };
  const b = { apiVersion: "apps.kubeno.dev/v2", kind: "Myapp", name: "b" };
  assert.deepEqual([...ownerKeys(App, { type: "added", object: owned("x", a) })], ["prod/a"]);
  // Another version of the same group is the same kind.
  const moved = { type: "modified" as const, old: owned("x", a), object: owned("x", b) };
  assert.deepEqual([...ownerKeys(App, moved)], ["prod/a", "prod/b"]);
  // One key for an unchanged owner; a cluster-scoped owner has no namespace.
  const same = { type: "modified" as const, old: owned("x", a), object: owned("x", a) };
  assert.deepEqual([...ownerKeys(App, same)], ["prod/a"]);
  assert.deepEqual([...ownerKeys(ClusterApp, same)], ["a"]);
});

Deno.test("ownerKeys ignores other kinds, other groups and objects without a controller", () => {
  const other = [
    { apiVersion: "other.dev/v1", kind: "Myapp", name: "a" },
    { apiVersion: "apps.kubeno.dev/v1", kind: "Other", name: "a" },
    { apiVersion: "v1", kind: "Myapp", name: "a" },
  ];
  for (const o of other) {
    assert.equal(ownerKeys(App, { type: "added", object: owned("x", o) }).size, 0);
  }
  assert.equal(ownerKeys(App, { type: "deleted", object: owned("x") }).size, 0);
  const notController = owned("x");
  notController.metadata.ownerReferences = [{
    apiVersion: "apps.kubeno.dev/v1",
    kind: "Myapp",
    name: "a",
    uid: "u",
  }];
  assert.equal(ownerKeys(App, { type: "added", object: notController }).size, 0);
});

Deno.test("mappedKeys maps both states, accepts keys, names and objects, and dedupes", () => {
  const seen: string[] = [];
  const spec = {
    map: (obj: KubeObject, c: CacheReader) => {
      assert.equal(c, cache);
      seen.push(obj.metadata.name!);
      return obj.metadata.name === "old"
        ? ["prod/a", { name: "b", namespace: "prod" }]
        : [{ metadata: { name: "a", namespace: "prod" } }, "c"];
    },
  };
  const ev: ObjectEvent<KubeObject> = {
    type: "modified",
    old: { metadata: { name: "old" } },
    object: { metadata: { name: "new" } },
  };
  assert.deepEqual([...mappedKeys(spec, cache, ev)], ["prod/a", "prod/b", "c"]);
  assert.deepEqual(seen, ["old", "new"]);
  // A modification without `old` (not from an informer) maps the object only.
  seen.length = 0;
  mappedKeys(spec, cache, { type: "modified", object: { metadata: { name: "new" } } });
  assert.deepEqual(seen, ["new"]);
});

Deno.test("mappedKeys maps nothing when a predicate refuses the event", () => {
  let calls = 0;
  const spec = {
    map: () => (calls++, ["k"]),
    predicates: [() => true, (ev: ObjectEvent<KubeObject>) => ev.type !== "deleted"],
  };
  const obj = { metadata: { name: "x" } };
  assert.equal(mappedKeys(spec, cache, { type: "deleted", object: obj }).size, 0);
  assert.equal(calls, 0);
  assert.deepEqual([...mappedKeys(spec, cache, { type: "added", object: obj })], ["k"]);
});

Deno.test("passes needs every predicate; none passes all", () => {
  const ev: ObjectEvent<KubeObject> = { type: "added", object: { metadata: { name: "x" } } };
  assert.equal(passes([], ev), true);
  assert.equal(passes([() => true, () => true], ev), true);
  assert.equal(passes([() => true, () => false], ev), false);
});
