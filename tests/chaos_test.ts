// Issue 20's chaos scenario at CI size (tests/_chaos.ts has the script; `deno task chaos` runs
// it at full size): two supervised replicas through two API server restarts, an etcd
// compaction, a SIGKILL of the leader and deletions. Every Widget converges, every deleted
// one is finalized, and a replica exits only for the SIGKILL or a Lease loss after an outage
// longer than the README's "always safe" 6 s (a loss after shorter ones fails). The second test
// runs examples/myapp.ts through it with webhooks, a certificate rotation and the counts of
// issue 14 (tests/_chaos_myapp.ts).
import assert from "node:assert/strict";
import { runChaos } from "./_chaos.ts";

Deno.test("two supervised replicas ride out API server restarts, compaction and a SIGKILL", async () => {
  const report = await runChaos({ objects: 180, deletes: 30, log: (l) => console.log(l) });
  console.log(`\nMeasured:\n  ${report.measured.join("\n  ")}`);
  assert.deepEqual(report.problems, []);
  // The SIGKILL is one restart; whatever else restarted was a Lease loss after an outage over
  // 6 s (checked in problems above).
  const killed = report.restarts.filter((e) => e.reason.startsWith("SIGKILL"));
  assert.equal(killed.length, 1, JSON.stringify(report.restarts));
});

Deno.test("myapp: two replicas with webhooks ride out the same chaos and a certificate rotation", async () => {
  const report = await runChaos({
    operator: "myapp",
    objects: 120,
    deletes: 20,
    log: (l) => console.log(l),
  });
  console.log(`\nMeasured:\n  ${report.measured.join("\n  ")}`);
  assert.deepEqual(report.problems, []);
  const killed = report.restarts.filter((e) => e.reason.startsWith("SIGKILL"));
  assert.equal(killed.length, 1, JSON.stringify(report.restarts));
});
