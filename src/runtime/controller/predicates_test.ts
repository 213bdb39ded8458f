import assert from "node:assert/strict";
import {
  and,
  annotationsChanged,
  deletionStarted,
  generationChanged,
  labelsChanged,
  not,
  or,
  type Predicate,
  resourceVersionChanged,
} from "./predicates.ts";
import type { KubeObject, ObjectMeta } from "../../core/object.ts";
import type { ObjectEvent } from "../watch/watch.ts";

const o = (meta: Partial<ObjectMeta> = {}): KubeObject => ({
  metadata: { name: "a", generation: 1, resourceVersion: "1", ...meta },
});
const create = (object: KubeObject): ObjectEvent<KubeObject> => ({ type: "added", object });
const del = (object: KubeObject): ObjectEvent<KubeObject> => ({ type: "deleted", object });
const update = (old: KubeObject, object: KubeObject): ObjectEvent<KubeObject> => ({
  type: "modified",
  old,
  object,
});

Deno.test("change predicates pass creates and deletes and compare updates", () => {
  const cases: [Predicate, Partial<ObjectMeta>][] = [
    [generationChanged, { generation: 2 }],
    [labelsChanged, { labels: { a: "b" } }],
    [annotationsChanged, { annotations: { a: "b" } }],
    [resourceVersionChanged, { resourceVersion: "2" }],
  ];
  for (const [p, change] of cases) {
    assert.ok(p(create(o())), p.name);
    assert.ok(p(del(o())), p.name);
    assert.ok(!p(update(o(), o())), p.name);
    assert.ok(p(update(o(), o(change))), p.name);
  }
  // Only their own field counts.
  assert.ok(!generationChanged(update(o(), o({ labels: { a: "b" }, resourceVersion: "2" }))));
  assert.ok(!labelsChanged(update(o({ labels: { a: "b" } }), o({ labels: { a: "b" } }))));
  assert.ok(labelsChanged(update(o({ labels: { a: "b" } }), o({ labels: { a: "c" } }))));
  assert.ok(labelsChanged(update(o({ labels: { a: "b" } }), o({ labels: { c: "b" } }))));
  assert.ok(!annotationsChanged(update(o({ annotations: {} }), o())));
});

Deno.test("deletionStarted sees deletion requests", () => {
  const deleting = o({ deletionTimestamp: "2025-01-01T00:00:00Z" });
  assert.ok(deletionStarted(create(deleting)));
  assert.ok(!deletionStarted(create(o())));
  assert.ok(deletionStarted(update(o(), deleting)));
  assert.ok(!deletionStarted(update(deleting, deleting)));
  assert.ok(!deletionStarted(update(o(), o({ generation: 2 }))));
  assert.ok(deletionStarted(del(o())));
});

Deno.test("and, or, not compose; custom predicates are functions", () => {
  const named: Predicate = (e) => e.object.metadata.name === "a";
  const specOrDeletion = or(generationChanged, deletionStarted);
  assert.ok(!specOrDeletion(update(o(), o({ labels: { x: "y" } }))));
  assert.ok(specOrDeletion(update(o(), o({ generation: 2 }))));
  assert.ok(specOrDeletion(update(o(), o({ deletionTimestamp: "2025-01-01T00:00:00Z" }))));
  assert.ok(and()(create(o())));
  assert.ok(!or()(create(o())));
  assert.ok(and(named, generationChanged)(create(o())));
  assert.ok(!and(named, not(generationChanged))(create(o())));
  assert.ok(!and(named)(create({ metadata: { name: "b" } })));
});
