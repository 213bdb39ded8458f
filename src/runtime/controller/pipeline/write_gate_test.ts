import assert from "node:assert/strict";
import type { KubeObject } from "../../../core/object.ts";
import { compareResourceVersions } from "../../../core/object.ts";
import { type OwnWrite, wroteOnly } from "../context/tracking.ts";
import { type CacheView, contains, hashOf, isEcho, LastWrites, OwnWrites } from "./write_gate.ts";

const CM = "v1\u0000ConfigMap";

function obj(name: string, rv: string, extra: Partial<KubeObject["metadata"]> = {}): KubeObject {
  return { metadata: { name, namespace: "ns", resourceVersion: rv, uid: `uid-${name}`, ...extra } };
}

function write(op: OwnWrite["op"], name: string, rv: string | undefined, base?: string): OwnWrite {
  return {
    kind: CM,
    key: `ns/${name}`,
    op,
    rv,
    base,
    uid: `uid-${name}`,
    object: rv ? obj(name, rv) : undefined,
    at: 1_000,
  };
}

/** A cache of ConfigMaps in namespace ns, at a watermark. */
function view(objects: KubeObject[], watermark: string): CacheView {
  const byKey = new Map(objects.map((o) => [`ns/${o.metadata.name}`, o]));
  return {
    lookup: (kind, key) => kind === CM ? { object: byKey.get(key), watermark } : undefined,
  };
}

Deno.test("OwnWrites: a write waits until the cache holds its resourceVersion or newer", () => {
  const w = new OwnWrites();
  w.record("p", write("write", "a", "20", "10"));
  assert.equal(w.lagging("p", view([obj("a", "10")], "15"), 1_100, 5_000).waiting.length, 1);
  assert.equal(w.lagging("p", view([obj("a", "25")], "25"), 1_100, 5_000).waiting.length, 0);
  assert.equal(w.size, 0, "confirmed writes are forgotten");
  // Compared as integers, not as strings: "9" < "10".
  w.record("p", write("write", "a", "10", "9"));
  assert.equal(w.lagging("p", view([obj("a", "9")], "9"), 1_100, 5_000).waiting.length, 1);
});

Deno.test("OwnWrites: a create waits for the object; an object deleted since by someone else does not hold it", () => {
  const w = new OwnWrites();
  w.record("p", write("create", "new", "30"));
  assert.equal(w.lagging("p", view([], "29"), 1_100, 5_000).waiting.length, 1);
  // The cache is past the create and has no such object: it was deleted since.
  assert.equal(w.lagging("p", view([], "31"), 1_100, 5_000).waiting.length, 0);
});

Deno.test("OwnWrites: a delete waits until the object is gone, or recreated with another uid", () => {
  const w = new OwnWrites();
  w.record("p", write("delete", "old", "40"));
  assert.equal(w.lagging("p", view([obj("old", "35")], "39"), 1_100, 5_000).waiting.length, 1);
  assert.equal(
    w.lagging("p", view([obj("old", "45", { uid: "other" })], "45"), 1_100, 5_000).waiting.length,
    0,
  );
  w.record("p", write("delete", "old", "40"));
  assert.equal(w.lagging("p", view([], "39"), 1_100, 5_000).waiting.length, 0);
});

Deno.test("OwnWrites: a write the cache never shows expires after the bound", () => {
  const w = new OwnWrites();
  w.record("p", write("create", "lost", "50"));
  const early = w.lagging("p", view([], "10"), 5_999, 5_000);
  assert.equal(early.waiting.length, 1);
  const late = w.lagging("p", view([], "10"), 6_000, 5_000);
  assert.equal(late.waiting.length, 0);
  assert.deepEqual(late.expired.map((x) => x.key), ["ns/lost"]);
  assert.equal(w.size, 0);
});

Deno.test("OwnWrites: an event that is exactly the write is its echo; one with another base is not", () => {
  const w = new OwnWrites();
  w.record("p", write("write", "a", "20", "10"));
  w.record("q", write("write", "b", "21", "11"));
  const other = w.observe(CM, "modified", obj("a", "20"), obj("a", "15"));
  assert.equal(other.echoes.size, 0, "someone else wrote 15 in between");
  assert.deepEqual([...other.touched], ["p"]);
  assert.deepEqual(w.of("p"), [], "the event confirms the write all the same");
  const echo = w.observe(CM, "modified", obj("b", "21"), obj("b", "11"));
  assert.deepEqual([...echo.echoes], ["q"]);
  w.record("p", write("create", "c", "30"));
  assert.deepEqual([...w.observe(CM, "added", obj("c", "30"), undefined).echoes], ["p"]);
  // A server-side apply that created the object: written on no known version.
  w.record("p", write("write", "d", "32"));
  assert.deepEqual([...w.observe(CM, "added", obj("d", "32"), undefined).echoes], ["p"]);
  w.record("p", write("delete", "c", "31"));
  assert.deepEqual([...w.observe(CM, "deleted", obj("c", "31"), undefined).echoes], ["p"]);
  assert.equal(w.size, 0);
});

Deno.test("OwnWrites: two writes of one object: the echo of each is recognised, in order", () => {
  const w = new OwnWrites();
  w.record("p", write("write", "a", "11", "10")); // e.g. the finalizer
  w.record("p", write("write", "a", "12", "11")); // then the status
  assert.deepEqual([...w.observe(CM, "modified", obj("a", "11"), obj("a", "10")).echoes], ["p"]);
  assert.equal(w.of("p").length, 1, "the later write is still waited for");
  assert.deepEqual([...w.observe(CM, "modified", obj("a", "12"), obj("a", "11")).echoes], ["p"]);
  assert.equal(w.size, 0);
});

Deno.test("OwnWrites: resourceVersions that are not comparable confirm only by an event of exactly the write", () => {
  const w = new OwnWrites();
  w.record("p", write("write", "a", "opaque-b", "opaque-a"));
  assert.equal(
    w.lagging("p", view([obj("a", "opaque-c")], "opaque-c"), 1_100, 5_000).waiting.length,
    1,
  );
  w.observe(CM, "modified", obj("a", "opaque-b"), obj("a", "opaque-a"));
  assert.equal(w.size, 0);
});

Deno.test("OwnWrites: a kind the controller does not cache is not waited for; forget drops a primary", () => {
  const w = new OwnWrites();
  w.record("p", { ...write("write", "a", "20", "10"), kind: "v1\u0000Secret" });
  assert.equal(w.lagging("p", view([], "1"), 1_100, 5_000).waiting.length, 0);
  w.record("p", write("write", "a", "20", "10"));
  w.forget("p");
  assert.equal(w.size, 0);
  assert.equal(w.observe(CM, "modified", obj("a", "20"), obj("a", "10")).echoes.size, 0);
});

Deno.test("wroteOnly: an answer that shows another's change besides the write's is no echo", () => {
  const base = {
    metadata: {
      name: "w",
      namespace: "ns",
      resourceVersion: "286",
      generation: 1,
      finalizers: ["f"],
    },
    spec: { size: 1 },
  };
  // A status patch made on 286 that the server applied on its own: the answer is the write.
  const own = {
    ...base,
    metadata: { ...base.metadata, resourceVersion: "298", managedFields: [{ manager: "m" }] },
    status: { phase: "Ready" },
  };
  assert.ok(wroteOnly(base, own, { status: { phase: "Ready" } }));
  // The same patch changed nothing on the server: it answers someone's deletion, at 643.
  const deleted = {
    ...own,
    metadata: {
      ...own.metadata,
      resourceVersion: "643",
      deletionTimestamp: "2026-12-03T17:46:05Z",
    },
  };
  assert.ok(!wroteOnly(base, deleted, { status: { phase: "Ready" } }));
  const respec = { ...own, metadata: { ...own.metadata, generation: 2 }, spec: { size: 3 } };
  assert.ok(!wroteOnly(base, respec, { status: { phase: "Ready" } }), "a new spec is not ours");
  assert.ok(wroteOnly(base, respec, { spec: { size: 3 }, status: { phase: "Ready" } }));
  const label = { ...own, metadata: { ...own.metadata, labels: { a: "b" } } };
  assert.ok(!wroteOnly(base, label, { status: { phase: "Ready" } }));
  // A list the write set is its own, whole; a replace sets everything.
  const unfinalized = { ...base, metadata: { ...base.metadata, finalizers: [] } };
  assert.ok(wroteOnly(base, unfinalized, { metadata: { finalizers: [] } }));
  assert.ok(!wroteOnly(base, unfinalized, { metadata: { labels: { a: "b" } } }));
  assert.ok(wroteOnly(base, deleted, "all"));

  // A write marked mixed is never the echo, even at exactly its versions.
  const w = { op: "write" as const, rv: "643", base: "286" };
  assert.ok(isEcho(w, "modified", "643", "286"));
  assert.ok(!isEcho({ ...w, mixed: true }, "modified", "643", "286"));
  const written = new OwnWrites();
  written.record("ns/w", { ...write("write", "w", "643", "286"), mixed: true });
  const ev = written.observe(CM, "modified", obj("w", "643"), obj("w", "286"));
  assert.equal(ev.echoes.size, 0, "the deletion is news to the primary");
  assert.equal(written.size, 0, "the event confirms the write all the same");
});

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
  const m = new LastWrites();
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
  const m = new LastWrites();
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
