import assert from "node:assert/strict";
import { assignShards } from "./assignment.ts";

function counts(desired: (string | undefined)[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const d of desired) if (d) m.set(d, (m.get(d) ?? 0) + 1);
  return m;
}

Deno.test("every member gets floor or ceil of its share, whatever the holders", () => {
  for (let n = 1; n <= 7; n++) {
    const members = Array.from({ length: n }, (_, i) => `m${i}`);
    for (let trial = 0; trial < 50; trial++) {
      const holders = Array.from(
        { length: 12 },
        () => Math.random() < 0.2 ? undefined : `m${Math.floor(Math.random() * (n + 2))}`,
      );
      const desired = assignShards(12, members, holders);
      assert.ok(desired.every((d) => d && members.includes(d)));
      for (const c of counts(desired).values()) {
        assert.ok(c === Math.floor(12 / n) || c === Math.ceil(12 / n), `${c} of 12 for ${n}`);
      }
    }
  }
  assert.deepEqual(assignShards(3, [], ["a"]), [undefined, undefined, undefined]);
});

Deno.test("a member joining or leaving moves only the shards it must", () => {
  const three = assignShards(12, ["a", "b", "c"], []);
  const four = assignShards(12, ["a", "b", "c", "d"], three);
  const moved = four.filter((d, i) => d !== three[i]);
  assert.equal(moved.length, 3);
  assert.ok(moved.every((d) => d === "d"));
  // Stable once held as desired.
  assert.deepEqual(assignShards(12, ["a", "b", "c", "d"], four), four);
  const left = assignShards(12, ["a", "c", "d"], four.map((h) => (h === "b" ? undefined : h)));
  assert.equal(left.filter((d, i) => d !== four[i]).length, 3, "only b's shards move");
});

Deno.test("the answer does not depend on the order members are listed in", () => {
  const holders = ["c", undefined, "a", "x", "b", "b", "b", "b", "b", undefined];
  assert.deepEqual(
    assignShards(10, ["a", "b", "c"], holders),
    assignShards(10, ["c", "a", "b", "a"], holders),
  );
});
