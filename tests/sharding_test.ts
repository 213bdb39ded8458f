// Issue 18's sharding scenario at CI size (tests/_sharding.ts has the script; `deno task
// sharding` runs it with 6,000 objects): three supervised replicas of the sharded test operator
// split 600 objects, each caching its third; one is SIGKILLed mid-load and its shards move; a
// fourth joins and shards rebalance; no object is ever reconciled by two replicas at once.
import assert from "node:assert/strict";
import { runSharding } from "./_sharding.ts";

Deno.test("three sharded replicas share 600 objects, survive a SIGKILL and rebalance to a fourth", async () => {
  const report = await runSharding({ objects: 600, log: (l) => console.log(l) });
  console.log(`\nMeasured:\n  ${report.measured.join("\n  ")}`);
  assert.deepEqual(report.problems, []);
  assert.equal(report.shares.length, 3);
  assert.equal(report.shares.reduce((s, r) => s + r.objects, 0), 600);
});
