// Leader election against a real kube-apiserver + etcd on loopback (one per file): two
// candidates in this process, then two `deno run` processes, one of them killed with SIGKILL.
// Durations are short (lease 3 s, renew deadline 2 s, retry 0.5 s) to keep the file quick.
// Timings are printed, and bounded only from below where that proves a wait happened; how
// long a takeover may take at most is asserted with a fake clock in
// src/runtime/manager/leader_election_test.ts, where load cannot stretch it.
import assert from "node:assert/strict";
import { type ControlPlane, startControlPlane } from "../testing.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { Lease } from "../src/core/kinds_cluster.ts";
import { type LeaderElector, leaderElector } from "../src/runtime/manager/leader_election.ts";
import { waitFor } from "./_helpers.ts";

const LEASE_MS = 3_000;
const RENEW_MS = 2_000;
const RETRY_MS = 500;
const NS = "default";

let cp: ControlPlane;
let client: Client;
let watcher: Client;

function candidate(name: string, identity: string, releaseOnCancel = true): LeaderElector {
  return leaderElector({
    client,
    name,
    namespace: NS,
    identity,
    leaseDurationMs: LEASE_MS,
    renewDeadlineMs: RENEW_MS,
    retryPeriodMs: RETRY_MS,
    releaseOnCancel,
  });
}

/**
 * Samples the electors' `isLeader` every 5 ms and counts the times more than one led, and
 * watches the Lease to record every change of holder in the server's order and each holder's
 * last `renewTime` (epoch ms). It watches from a version listed before any elector starts, so
 * it sees every holder however late its watch connection opens.
 */
async function monitor(c: Client, lease: string, electors: LeaderElector[]) {
  const fieldSelector = `metadata.name=${lease}`;
  const listed = await c.list(Lease, { namespace: NS, fieldSelector });
  let overlaps = 0;
  const holders: string[] = listed.items.map((l) => l.spec?.holderIdentity ?? "");
  const lastRenew = new Map<string, number>();
  const local = setInterval(() => {
    if (electors.filter((e) => e.isLeader).length > 1) overlaps++;
  }, 5);
  const abort = new AbortController();
  const watching = (async () => {
    const events = c.watchEvents(Lease, {
      namespace: NS,
      fieldSelector,
      resourceVersion: listed.metadata.resourceVersion,
      signal: abort.signal,
    });
    for await (const ev of events) {
      if (ev.type !== "ADDED" && ev.type !== "MODIFIED") continue;
      const h = ev.object.spec?.holderIdentity ?? "";
      if (holders.at(-1) !== h) holders.push(h);
      const renewTime = ev.object.spec?.renewTime;
      if (h && renewTime) lastRenew.set(h, Date.parse(renewTime));
    }
  })().catch(() => {});
  return {
    holders,
    lastRenew,
    get overlaps() {
      return overlaps;
    },
    /** Waits for the Lease to show `last`, then stops. */
    async stop(last: string) {
      await waitFor(() => holders.at(-1) === last, { what: `holder "${last}"` });
      clearInterval(local);
      abort.abort();
      await watching;
    },
  };
}

interface ChildEvent {
  event: string;
  identity: string;
  at: number;
  leader?: string;
  end?: string;
}

function spawnElector(identity: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./fixtures/elector.ts", import.meta.url).pathname,
      cp.kubeconfigPath,
      NS,
      "processes",
      identity,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const events: ChildEvent[] = [];
  const reading = (async () => {
    let buf = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        events.push(JSON.parse(buf.slice(0, nl)));
        buf = buf.slice(nl + 1);
      }
    }
  })();
  return { child, events, reading, identity };
}

Deno.test("leader election against a real API server", async (t) => {
  await using plane = await startControlPlane();
  cp = plane;
  using c1 = await createClient({ kubeconfig: cp.kubeconfigPath });
  using c2 = await createClient({ kubeconfig: cp.kubeconfigPath });
  client = c1;
  watcher = c2;

  await t.step(
    "two electors: exactly one leads; after a crash the standby takes over",
    async () => {
      const a = candidate("crash", "a", false);
      const b = candidate("crash", "b");
      const mon = await monitor(watcher, "crash", [a, b]);
      const crash = new AbortController();
      const stopB = new AbortController();
      const aEnded = a.run(crash.signal);
      await a.elected;
      const bEnded = b.run(stopB.signal);
      await waitFor(() => b.leader === "a", { what: "b to observe a" });
      // A renewal: b does not take over from a live leader.
      const renewed = (await client.get(Lease, "crash", { namespace: NS })).spec?.renewTime;
      await waitFor(
        async () =>
          (await client.get(Lease, "crash", { namespace: NS })).spec?.renewTime !== renewed,
        { what: "a renewal" },
      );
      assert.ok(a.isLeader && !b.isLeader);

      crash.abort(); // no release, like kill -9
      const crashedAt = Date.now();
      assert.equal(await aEnded, "stopped");
      await waitFor(() => b.isLeader, { what: "b to take over" });
      const ledAt = Date.now();
      console.log(
        `takeover after crash: ${
          ledAt - crashedAt
        } ms (lease ${LEASE_MS} ms, retry ${RETRY_MS} ms)`,
      );
      const lease = await client.get(Lease, "crash", { namespace: NS });
      assert.equal(lease.spec?.holderIdentity, "b");
      assert.equal(lease.spec?.leaseTransitions, 1);
      stopB.abort();
      assert.equal(await bEnded, "stopped");
      await mon.stop("");
      assert.equal(mon.overlaps, 0);
      assert.deepEqual(mon.holders, ["a", "b", ""]);
      // b waited out a full lease duration after a's last renewal (same clock, this process).
      const waited = ledAt - mon.lastRenew.get("a")!;
      assert.ok(waited >= LEASE_MS, `b led ${waited} ms after a's last renewal`);
    },
  );

  await t.step("graceful release empties the Lease and the standby takes it", async () => {
    const a = candidate("handover", "a");
    const b = candidate("handover", "b");
    const mon = await monitor(watcher, "handover", [a, b]);
    const aEnded = a.run();
    await a.elected;
    const stopB = new AbortController();
    const bEnded = b.run(stopB.signal);
    await waitFor(() => b.leader === "a", { what: "b to observe a" });
    const releasedAt = Date.now();
    await a.release();
    assert.equal(await aEnded, "stopped");
    assert.ok(!a.isLeader);
    await waitFor(() => b.isLeader, { what: "b to take over" });
    const took = Date.now() - releasedAt;
    console.log(`handover after release: ${took} ms (retry ${RETRY_MS} ms)`);
    stopB.abort();
    await bEnded;
    await mon.stop("");
    assert.equal(mon.overlaps, 0);
    assert.deepEqual(mon.holders, ["a", "", "b", ""]);
  });

  await t.step(
    "an elector that cannot renew keeps trying for the renew deadline, then stops leading",
    async () => {
      // A client pointing nowhere after election: renewals fail, leadership is given up.
      let broken = false;
      let failed = 0;
      let lastWrite = 0; // when the last successful write of the Lease (the acquisition) returned
      const down = () => (failed++, Promise.reject(new Error("Network down")));
      const written = <T>(p: Promise<T>) => p.then((v) => (lastWrite = Date.now(), v));
      const flaky = {
        get:
          ((...args: Parameters<Client["get"]>) => broken ? down() : client.get(...args)) as Client[
            "get"
          ],
        create:
          ((...args: Parameters<Client["create"]>) => written(client.create(...args))) as Client[
            "create"
          ],
        replace:
          ((...args: Parameters<Client["replace"]>) =>
            broken ? down() : written(client.replace(...args))) as Client["replace"],
      };
      let stoppedAt = 0;
      const stopped: string[] = [];
      const a = leaderElector({
        client: flaky,
        name: "flaky",
        namespace: NS,
        identity: "a",
        leaseDurationMs: LEASE_MS,
        renewDeadlineMs: RENEW_MS,
        retryPeriodMs: RETRY_MS,
        onStoppedLeading: (r) => {
          stoppedAt = Date.now();
          stopped.push(r);
        },
      });
      const ended = a.run();
      await a.elected;
      broken = true;
      assert.equal(await ended, "lost");
      assert.deepEqual(stopped, ["lost"]);
      assert.ok(!a.isLeader);
      const led = stoppedAt - lastWrite;
      console.log(
        `gave up leading ${led} ms after the last renewal, ${failed} failed calls (deadline ${RENEW_MS} ms)`,
      );
      // It did not give up at the first failure: it led on for the whole renew deadline.
      assert.ok(led >= RENEW_MS - 50, `gave up after ${led} ms`);
    },
  );

  await t.step(
    "two processes: kill -9 of the leader, the other takes over; SIGTERM releases",
    async () => {
      const mon = await monitor(watcher, "processes", []);
      const p1 = spawnElector("p1");
      const p2 = spawnElector("p2");
      try {
        const started = (p: { events: ChildEvent[] }) =>
          p.events.some((e) => e.event === "started");
        await waitFor(() => started(p1) || started(p2), { what: "a leader" });
        const [leader, standby] = started(p1) ? [p1, p2] : [p2, p1];
        await waitFor(() => standby.events.some((e) => e.event === "leader"), {
          what: "the standby to see the leader",
        });
        assert.ok(!started(standby));
        leader.child.kill("SIGKILL");
        const killedAt = Date.now();
        assert.equal((await leader.child.status).signal, "SIGKILL");
        await waitFor(() => started(standby), { what: "the standby to take over" });
        const ledAt = standby.events.find((e) => e.event === "started")!.at;
        console.log(
          `takeover after kill -9: ${
            ledAt - killedAt
          } ms (lease ${LEASE_MS} ms, retry ${RETRY_MS} ms)`,
        );
        assert.equal(
          (await client.get(Lease, "processes", { namespace: NS })).spec?.holderIdentity,
          standby.identity,
        );
        standby.child.kill("SIGTERM");
        const status = await standby.child.status;
        assert.equal(status.code, 0);
        await standby.reading;
        assert.deepEqual(standby.events.at(-1)?.end, "stopped");
        const lease = await client.get(Lease, "processes", { namespace: NS });
        assert.equal(lease.spec?.holderIdentity, "");
        assert.equal(lease.spec?.leaseDurationSeconds, 1);
        await mon.stop("");
        assert.deepEqual(mon.holders, [leader.identity, standby.identity, ""]);
        // The standby waited out a full lease duration after the killed leader's last renewal
        // (both processes read this machine's clock).
        const waited = ledAt - mon.lastRenew.get(leader.identity)!;
        assert.ok(waited >= LEASE_MS, `the standby led ${waited} ms after the last renewal`);
      } finally {
        for (const p of [p1, p2]) {
          try {
            p.child.kill("SIGKILL");
          } catch { /* already exited */ }
          await p.child.status;
          await p.reading.catch(() => {});
        }
      }
    },
  );
});
