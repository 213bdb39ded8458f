import assert from "node:assert/strict";
import { assignShards } from "./assignment.ts";

function counts(desired: (string | undefined)[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const d of desired) if (d) m.set(d, (m.get(d) ?? 0) + 1);
  return m;
}

/** mulberry32: a seeded PRNG, so that a failing case can be replayed with its seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("every member gets floor or ceil of its share, whatever the holders", () => {
  // SEED=<n> replays a run; each run prints the seed it used.
  const seed = Number(Deno.env.get("SEED") ?? Date.now() % 2 ** 31);
  console.log(`seed ${seed}`);
  const random = seeded(seed);
  for (let n = 1; n <= 7; n++) {
    const members = Array.from({ length: n }, (_, i) => `m${i}`);
    for (let trial = 0; trial < 50; trial++) {
      const holders = Array.from(
        { length: 12 },
        () => random() < 0.2 ? undefined : `m${Math.floor(random() * (n + 2))}`,
      );
      const desired = assignShards(12, members, holders);
      assert.ok(desired.every((d) => d && members.includes(d)));
      for (const c of counts(desired).values()) {
        assert.ok(
          c === Math.floor(12 / n) || c === Math.ceil(12 / n),
          `${c} of 12 for ${n} (seed ${seed})`,
        );
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
