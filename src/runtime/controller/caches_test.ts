import assert from "node:assert/strict";
import { reconcile } from "./reconcile.ts";
import { ConfigMap, Node, Pod, Secret } from "../../core/kinds.ts";
import { metadataOnly } from "../../core/metadata_only.ts";

const noop = () => {};

Deno.test("caches: one entry per kind, primary first, declarations merged", () => {
  const byOwner = () => [];
  const c = reconcile(ConfigMap, {
    owns: [{ resource: Secret, labelSelector: "app=x", indexes: { byOwner } }],
    watches: [{ resource: Secret, map: () => [] }, { resource: Pod, map: () => [] }],
    reads: [metadataOnly(Pod), Node],
    primary: { namespaces: ["a"], indexes: { byName: (cm) => [cm.metadata.name!] } },
    reconcile: noop,
  });
  assert.deepEqual(c.caches.map((k) => [k.resource.kind, k.roles.join("+")]), [
    ["ConfigMap", "primary"],
    ["Secret", "owns+watches"],
    ["Pod", "watches"],
    ["Pod", "reads"],
    ["Node", "reads"],
  ]);
  assert.deepEqual(c.caches[0].namespaces, ["a"]);
  assert.deepEqual(Object.keys(c.caches[0].indexes), ["byName"]);
  assert.equal(c.caches[1].labelSelector, "app=x", "the watch takes the owns entry's scope");
  assert.equal(c.caches[1].indexes.byOwner, byOwner);
  assert.equal(c.caches[3].resource, metadataOnly(Pod), "metadata-only is cached apart");
  assert.deepEqual(c.owns, [Secret]);
  assert.deepEqual(c.reads, [metadataOnly(Pod), Node]);
  assert.ok(Object.isFrozen(c.caches) && Object.isFrozen(c.caches[0]));
});

Deno.test("caches: a scope declared later is taken; two different scopes are refused", () => {
  const c = reconcile(ConfigMap, {
    owns: [Secret],
    reads: [{ resource: Secret, namespaces: ["b"] }],
    reconcile: noop,
  });
  assert.deepEqual(c.caches[1].namespaces, ["b"]);
  assert.throws(
    () =>
      reconcile(ConfigMap, {
        name: "two",
        owns: [{ resource: Secret, labelSelector: "a=1" }],
        reads: [{ resource: Secret, labelSelector: "a=2" }],
        reconcile: noop,
      }),
    {
      name: "TypeError",
      message:
        `Cannot define controller "two": Secret is declared in owns and reads with different cache scopes; declare the scope once, or the same in both`,
    },
  );
});

Deno.test("caches: bad declarations are refused with one line", () => {
  assert.throws(
    () => reconcile(ConfigMap, { reads: [{ resource: Node, namespaces: ["a"] }], reconcile: noop }),
    {
      message:
        `Cannot define controller "configmap": Node is cluster-scoped; it cannot be cached in namespaces`,
    },
  );
  assert.throws(
    () =>
      reconcile(ConfigMap, {
        owns: [{ resource: Secret, indexes: { x: () => [] } }],
        reads: [{ resource: Secret, indexes: { x: () => ["other"] } }],
        reconcile: noop,
      }),
    { message: `Cannot define controller "configmap": index "x" on Secret is declared twice` },
  );
});
