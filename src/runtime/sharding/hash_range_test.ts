import assert from "node:assert/strict";
import {
  fnv1a64,
  HASH_SPACE,
  hexBound,
  rangeLabel,
  shardIndex,
  shardOf,
  shardRanges,
  shardSelector,
} from "./hash_range.ts";

Deno.test("fnv1a64 matches Go's hash/fnv New64a", () => {
  // `go run` of fnv.New64a over the same strings' bytes.
  const vectors: [string, string][] = [
    ["", "cbf29ce484222325"],
    ["a", "af63dc4c8601ec8c"],
    ["foobar", "85944171f73967e8"],
    ["3f2b8c1e-9d4a-4b7e-8a1f-0c2d3e4f5a6b", "f466bd1641addc94"],
    ["kube-system", "df65c7bc1d82b35e"],
    ["日本語", "ee9ee2b5c854ef87"],
    ["ns-ÿ", "7ffeb089d9ed4f8b"],
  ];
  for (const [s, hex] of vectors) assert.equal(fnv1a64(s).toString(16).padStart(16, "0"), hex, s);
});

Deno.test("shardRanges cover the hash space in order, and shardIndex agrees at every bound", () => {
  for (const count of [1, 2, 3, 7, 12, 64]) {
    const ranges = shardRanges(count);
    assert.equal(ranges[0].start, 0n);
    assert.equal(ranges.at(-1)!.end, HASH_SPACE);
    for (let i = 0; i < count; i++) {
      if (i > 0) assert.equal(ranges[i].start, ranges[i - 1].end);
      assert.equal(shardIndex(ranges[i].start, count), i);
      assert.equal(shardIndex(ranges[i].end - 1n, count), i);
    }
  }
  assert.throws(() => shardRanges(0), RangeError);
  assert.throws(() => shardRanges(1.5), RangeError);
});

Deno.test("shardSelector merges adjacent shards into the server's String() format", () => {
  assert.equal(shardSelector("uid", [], 4), null);
  assert.equal(
    shardSelector("namespace", [3, 0, 2], 4),
    "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000') || " +
      "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
  );
  assert.equal(
    shardSelector("uid", [0, 1, 2, 3], 4),
    "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')",
  );
  assert.equal(hexBound(HASH_SPACE), "0x10000000000000000");
  assert.equal(rangeLabel(shardRanges(2)[1]), "8000000000000000-10000000000000000");
});

Deno.test("shardOf hashes the uid or the namespace", () => {
  const obj = { metadata: { name: "a", namespace: "kube-system", uid: "foobar" } };
  assert.equal(shardOf(obj, "uid", 16), 0x8);
  assert.equal(shardOf(obj, "namespace", 16), 0xd);
  assert.equal(shardOf({ metadata: { name: "a" } }, "namespace", 16), 0xc);
});
