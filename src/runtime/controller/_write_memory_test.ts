import assert from "node:assert/strict";
import { compareResourceVersions, contains, hashOf, WriteMemory } from "./_write_memory.ts";

Deno.test("resourceVersions compare as KEP-5504 integers; others only by equality", () => {
  assert.equal(compareResourceVersions("9", "10"), -1);
  assert.equal(compareResourceVersions("120", "119"), 1);
  assert.equal(compareResourceVersions("77", "77"), 0);
  assert.ok(Number.isNaN(compareResourceVersions("07", "7")));
  assert.ok(Number.isNaN(compareResourceVersions("abc", "abd")));
  assert.equal(compareResourceVersions("abc", "abc"), 0);
});

Deno.test("contains: maps may hold more, lists match element by element", () => {
  const cached = {
    metadata: { name: "a", uid: "u", labels: { x: "1", y: "2" } },
    spec: { containers: [{ name: "c", image: "i", terminationMessagePath: "/dev/t" }] },
  };
  assert.ok(contains(cached, { metadata: { name: "a", labels: { x: "1" } } }));
  assert.ok(contains(cached, { spec: { containers: [{ name: "c", image: "i" }] } }));
  assert.ok(!contains(cached, { spec: { containers: [{ name: "c", image: "j" }] } }));
  assert.ok(!contains(cached, { spec: { containers: [] } }));
  assert.ok(!contains(cached, { metadata: { labels: { z: "3" } } }));
  assert.ok(!contains({ data: { n: "1" } }, { data: { n: 1 } }));
});

Deno.test("an apply is skipped only when unchanged since the last one and still cached so", () => {
  const m = new WriteMemory();
  const desired = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "a" },
    data: { v: "1" },
  };
  const cached = { metadata: { name: "a", resourceVersion: "5" }, data: { v: "1" } };
  assert.equal(m.applyUnchanged("k", desired, cached), false, "never applied");
  m.recordApply("k", desired);
  assert.equal(m.applyUnchanged("k", desired, cached), true);
  assert.equal(m.applyUnchanged("k", desired, undefined), false, "not in the cache");
  assert.equal(
    m.applyUnchanged("k", desired, { ...cached, data: { v: "2" } }),
    false,
    "changed by someone else",
  );
  const dropped = { ...desired, data: {} };
  assert.equal(m.applyUnchanged("k", dropped, cached), false, "a field dropped from desired");
  m.forgetApplied("k");
  assert.equal(m.applyUnchanged("k", desired, cached), false, "deleted since");
});

Deno.test("a status patch is skipped only while the cache has not seen the same write", () => {
  const m = new WriteMemory();
  const patch = { observedGeneration: 2 };
  m.recordStatus("ns/a", patch, "120");
  assert.equal(m.statusPending("ns/a", patch, "119"), true, "cache behind the write");
  assert.equal(m.statusPending("ns/a", patch, "120"), false, "cache caught up: it decides");
  assert.equal(m.statusPending("ns/a", patch, "121"), false, "changed after the write");
  assert.equal(m.statusPending("ns/a", { observedGeneration: 3 }, "119"), false);
  assert.equal(m.statusPending("ns/a", patch, "x"), false, "not comparable");
  m.forgetStatus("ns/a");
  assert.equal(m.size, 0);
  assert.equal(hashOf({ a: 1 }), hashOf({ a: 1 }));
  assert.notEqual(hashOf({ a: 1 }), hashOf({ a: 2 }));
});
