import assert from "node:assert/strict";
import { diffJson, escapePointerToken } from "./_json_patch.ts";
import { applyJsonPatch, parsePointer } from "../../tests/_json_patch.ts";

Deno.test("diffJson escapes ~ and / in pointers", () => {
  const ops = diffJson(
    { metadata: { labels: { "a/b": "1" } } },
    { metadata: { labels: { "a/b": "2", "x~y": "3", "app.kubernetes.io/name": "n" } } },
  );
  assert.deepEqual(ops, [
    { op: "replace", path: "/metadata/labels/a~1b", value: "2" },
    { op: "add", path: "/metadata/labels/x~0y", value: "3" },
    { op: "add", path: "/metadata/labels/app.kubernetes.io~1name", value: "n" },
  ]);
  assert.deepEqual(parsePointer("/a~1b/x~0y/~01"), ["a/b", "x~y", "~1"]);
  assert.equal(escapePointerToken("~/"), "~0~1");
});

Deno.test("diffJson handles arrays, type changes, undefined and the root", () => {
  assert.deepEqual(diffJson({ a: [1, 2, 3] }, { a: [1, 5] }), [
    { op: "replace", path: "/a/1", value: 5 },
    { op: "remove", path: "/a/2" },
  ]);
  assert.deepEqual(diffJson({ a: [1] }, { a: [1, { b: 2 }, 3] }), [
    { op: "add", path: "/a/1", value: { b: 2 } },
    { op: "add", path: "/a/2", value: 3 },
  ]);
  assert.deepEqual(diffJson({ a: 1, b: 2 }, { a: "1", b: undefined }), [
    { op: "replace", path: "/a", value: "1" },
    { op: "remove", path: "/b" },
  ]);
  assert.deepEqual(diffJson([1], { a: 1 }), [{ op: "replace", path: "", value: { a: 1 } }]);
  assert.deepEqual(diffJson({ a: { b: [1, { c: 1 }] } }, { a: { b: [1, { c: 1 }] } }), []);
  assert.deepEqual(diffJson({ "": 1 }, { "": 2 }), [{ op: "replace", path: "/", value: 2 }]);
});

Deno.test("applyJsonPatch implements every operation and fails on missing paths", () => {
  const doc = { a: [1, 2], b: { c: 1 } };
  assert.deepEqual(
    applyJsonPatch(doc, [
      { op: "add", path: "/a/-", value: 3 },
      { op: "add", path: "/a/0", value: 0 },
      { op: "copy", from: "/b", path: "/d" },
      { op: "move", from: "/b/c", path: "/e" },
      { op: "test", path: "/e", value: 1 },
      { op: "remove", path: "/a/1" },
    ]),
    { a: [0, 2, 3], b: {}, d: { c: 1 }, e: 1 },
  );
  assert.deepEqual(doc, { a: [1, 2], b: { c: 1 } }, "input untouched");
  assert.throws(() => applyJsonPatch(doc, [{ op: "remove", path: "/x" }]), /does not exist/);
  assert.throws(() => applyJsonPatch(doc, [{ op: "replace", path: "/a/5", value: 1 }]), /bounds/);
  assert.throws(() => applyJsonPatch(doc, [{ op: "test", path: "/b/c", value: 2 }]), /test failed/);
});

function randomJson(depth: number, rnd: () => number): unknown {
  const r = rnd();
  if (depth <= 0 || r < 0.3) {
    return [null, true, false, 0, 1, -2.5, "", "x", "a/b", "~", "~1"][Math.floor(rnd() * 11)];
  }
  if (r < 0.6) {
    return Array.from({ length: Math.floor(rnd() * 4) }, () => randomJson(depth - 1, rnd));
  }
  const keys = ["a", "b", "a/b", "~0", "x~1y", "", "-", "0"];
  const out: Record<string, unknown> = {};
  for (const k of keys) if (rnd() < 0.35) out[k] = randomJson(depth - 1, rnd);
  return out;
}

Deno.test("applyJsonPatch(before, diffJson(before, after)) equals after for random documents", () => {
  let seed = 42;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < 3000; i++) {
    const before = randomJson(4, rnd);
    const after = rnd() < 0.2 ? structuredClone(before) : randomJson(4, rnd);
    const ops = diffJson(before, after);
    assert.deepEqual(applyJsonPatch(before, ops), after ?? null, JSON.stringify({ before, after }));
  }
});
