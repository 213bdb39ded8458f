import assert from "node:assert/strict";
import { ApiError, ConnectionError } from "../../client/errors/api_error.ts";
import { FakeClock } from "../../testing/fake_clock.ts";
import type { Lease } from "../../core/kinds_cluster.ts";
import {
  type LeaderElector,
  leaderElector,
  type LeaderElectorOptions,
  type LeaseClient,
} from "./leader_election.ts";

const target = {
  verb: "update",
  kind: "Lease",
  apiVersion: "coordination.k8s.io/v1",
  plural: "leases",
};

function apiError(code: number, reason: string): ApiError {
  return ApiError.fromStatus(target, code, {
    code,
    reason,
    message: reason,
    kind: "Status",
    details: { name: "op", kind: "leases" },
  });
}

/** One Lease in memory with resourceVersion checks, and scripted failures. */
class FakeLeases {
  lease?: Lease;
  rv = 0;
  down = false;
  conflicts = 0;
  writes: string[] = [];

  get = (_res: unknown, _name: string): Promise<Lease> => {
    if (this.down) return Promise.reject(new ConnectionError("https://x", "get", "down"));
    if (!this.lease) return Promise.reject(apiError(404, "NotFound"));
    return Promise.resolve(structuredClone(this.lease));
  };

  create = (_res: unknown, obj: Lease): Promise<Lease> => {
    if (this.down) return Promise.reject(new ConnectionError("https://x", "create", "down"));
    if (this.lease) return Promise.reject(apiError(409, "AlreadyExists"));
    return Promise.resolve(this.#store(obj));
  };

  replace = (_res: unknown, obj: Lease): Promise<Lease> => {
    if (this.down) return Promise.reject(new ConnectionError("https://x", "update", "down"));
    if (
      this.conflicts > 0 || obj.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion
    ) {
      this.conflicts = Math.max(0, this.conflicts - 1);
      return Promise.reject(apiError(409, "Conflict"));
    }
    return Promise.resolve(this.#store(obj));
  };

  /** Changes the lease as another writer would. */
  set(spec: Lease["spec"]): void {
    this.#store({ metadata: { name: "op", namespace: "ns" }, spec });
  }

  #store(obj: Lease): Lease {
    this.lease = structuredClone({
      ...obj,
      metadata: { ...obj.metadata, resourceVersion: String(++this.rv) },
    });
    this.writes.push(obj.spec?.holderIdentity ?? "");
    return structuredClone(this.lease);
  }
}

function setup(
  api: FakeLeases,
  clock: FakeClock,
  identity: string,
  extra: Partial<LeaderElectorOptions> = {},
) {
  const events: string[] = [];
  const elector = leaderElector({
    client: api as unknown as LeaseClient,
    name: "op",
    namespace: "ns",
    identity,
    clock,
    onStartedLeading: () => events.push("started"),
    onStoppedLeading: (r) => events.push(`stopped:${r}`),
    onNewLeader: (id) => events.push(`leader:${id}`),
    ...extra,
  });
  return { elector, events };
}

/** Advances fake time in small steps, asserting that at most one elector leads throughout. */
async function advance(clock: FakeClock, ms: number, electors: LeaderElector[]): Promise<void> {
  for (let t = 0; t < ms; t += 100) {
    await clock.tickAsync(Math.min(100, ms - t));
    assert.ok(electors.filter((e) => e.isLeader).length <= 1, "Two leaders at once");
  }
}

Deno.test("leaderElector() creates a missing lease, renews it and releases it on abort", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const api = new FakeLeases();
  const { elector, events } = setup(api, clock, "a");
  const stop = new AbortController();
  const ended = elector.run(stop.signal);
  await elector.elected;
  assert.ok(elector.isLeader);
  assert.equal(elector.leader, "a");
  assert.equal(api.lease?.spec?.holderIdentity, "a");
  assert.equal(api.lease?.spec?.leaseDurationSeconds, 15);
  assert.equal(api.lease?.spec?.leaseTransitions, 0);
  assert.match(api.lease?.spec?.renewTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  const acquired = api.lease?.spec?.acquireTime;
  const renewed = api.lease?.spec?.renewTime;
  await clock.tickAsync(2_000);
  assert.notEqual(api.lease?.spec?.renewTime, renewed);
  assert.equal(api.lease?.spec?.acquireTime, acquired);
  stop.abort();
  assert.equal(await ended, "stopped");
  assert.equal(api.lease?.spec?.holderIdentity, "");
  assert.equal(api.lease?.spec?.leaseDurationSeconds, 1);
  assert.deepEqual(events, ["leader:a", "started", "stopped:stopped"]);
  assert.throws(() => elector.run(), /already ran/);
});

Deno.test("leaderElector() standby judges expiry by when it saw the record change, not renewTime", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const api = new FakeLeases();
  // A stale renewTime from a machine whose clock is far behind.
  api.set({
    holderIdentity: "x",
    leaseDurationSeconds: 15,
    renewTime: "2001-01-01T00:00:00.000000Z",
    leaseTransitions: 3,
  });
  const { elector, events } = setup(api, clock, "b");
  const stop = new AbortController();
  const ended = elector.run(stop.signal);
  await clock.tickAsync(10_000);
  assert.ok(!elector.isLeader);
  assert.equal(elector.leader, "x");
  // The holder renews: the standby's 15 s start again.
  api.set({
    holderIdentity: "x",
    leaseDurationSeconds: 15,
    renewTime: "2001-01-01T00:00:10.000000Z",
    leaseTransitions: 3,
  });
  await clock.tickAsync(14_000);
  assert.ok(!elector.isLeader);
  // Seen by the next poll (<= 2.4 s), expired 15 s later, taken at the next poll (<= 2.4 s).
  await clock.tickAsync(6_000);
  assert.ok(elector.isLeader);
  assert.equal(api.lease?.spec?.leaseTransitions, 4);
  assert.deepEqual(events, ["leader:x", "leader:b", "started"]);
  stop.abort();
  await ended;
});

Deno.test("leaderElector() two candidates: one leads, the other takes over after a crash", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const api = new FakeLeases();
  const a = setup(api, clock, "a", { releaseOnCancel: false });
  const b = setup(api, clock, "b");
  const crash = new AbortController();
  const aEnded = a.elector.run(crash.signal);
  await a.elector.elected;
  const stopB = new AbortController();
  const bEnded = b.elector.run(stopB.signal);
  await advance(clock, 20_000, [a.elector, b.elector]);
  assert.ok(a.elector.isLeader && !b.elector.isLeader);
  crash.abort(); // like kill -9: no release
  assert.equal(await aEnded, "stopped");
  assert.equal(api.lease?.spec?.holderIdentity, "a");
  const crashedAt = clock.now();
  while (!b.elector.isLeader) await advance(clock, 100, [a.elector, b.elector]);
  const took = clock.now() - crashedAt;
  assert.ok(took >= 15_000 - 2_400 && took <= 15_000 + 4_800 + 100, `took ${took} ms`);
  assert.equal(api.lease?.spec?.leaseTransitions, 1);
  stopB.abort();
  await bEnded;
});

Deno.test("leaderElector() graceful release hands over within one retry period", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const api = new FakeLeases();
  const a = setup(api, clock, "a");
  const b = setup(api, clock, "b");
  const aEnded = a.elector.run();
  await a.elector.elected;
  const stopB = new AbortController();
  const bEnded = b.elector.run(stopB.signal);
  await advance(clock, 5_000, [a.elector, b.elector]);
  await a.elector.release();
  assert.equal(await aEnded, "stopped");
  assert.deepEqual(a.events, ["leader:a", "started", "stopped:stopped"]);
  const releasedAt = clock.now();
  while (!b.elector.isLeader) await advance(clock, 100, [a.elector, b.elector]);
  assert.ok(clock.now() - releasedAt <= 2_400 + 100);
  stopB.abort();
  await bEnded;
});

Deno.test("leaderElector() loses leadership when renewals fail for the renew deadline", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const api = new FakeLeases();
  let leading: AbortSignal | undefined;
  const { elector, events } = setup(api, clock, "a", { onStartedLeading: (s) => leading = s });
  const ended = elector.run();
  await elector.elected;
  api.down = true;
  await clock.tickAsync(9_000);
  assert.ok(elector.isLeader && !leading?.aborted);
  await clock.tickAsync(1_500);
  assert.ok(!elector.isLeader);
  assert.ok(leading?.aborted);
  assert.equal(await ended, "lost");
  assert.deepEqual(events, ["leader:a", "stopped:lost"]);
});

Deno.test("leaderElector() an API server outage under renew deadline - 2 x retry period costs no Lease", async () => {
  // Defaults: lease 15 s, renew deadline 10 s, retry period 2 s. Whatever the outage's phase
  // against the leader's renewals, 5.9 s of it leaves the leader leading and the standby
  // waiting (what run --help and the README promise).
  for (let phase = 0; phase < 2_000; phase += 250) {
    const clock = new FakeClock(1_700_000_000_000);
    const api = new FakeLeases();
    const a = setup(api, clock, "a");
    const b = setup(api, clock, "b");
    const stop = new AbortController();
    const ended = [a.elector.run(stop.signal), b.elector.run(stop.signal)];
    await a.elector.elected;
    // a renews every 2 s from its acquisition; start the outage `phase` ms after a renewal.
    await advance(clock, 4_000 + phase, [a.elector, b.elector]);
    api.down = true;
    await advance(clock, 5_900, [a.elector, b.elector]);
    api.down = false;
    await advance(clock, 20_000, [a.elector, b.elector]);
    assert.ok(a.elector.isLeader, `phase ${phase}: a lost the lease`);
    assert.deepEqual(a.events, ["leader:a", "started"], `phase ${phase}`);
    assert.deepEqual(b.events, ["leader:a"], `phase ${phase}`);
    stop.abort();
    await Promise.all(ended);
  }
});

Deno.test("leaderElector() a standby keeps campaigning through an outage and takes over after", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const api = new FakeLeases();
  const a = setup(api, clock, "a", { releaseOnCancel: false });
  const b = setup(api, clock, "b");
  const crash = new AbortController();
  const aEnded = a.elector.run(crash.signal);
  await a.elector.elected;
  const stopB = new AbortController();
  let bDone = false;
  const bEnded = b.elector.run(stopB.signal).finally(() => bDone = true);
  await advance(clock, 5_000, [a.elector, b.elector]);
  // The leader dies while the API server is away for 30 s.
  crash.abort();
  assert.equal(await aEnded, "stopped");
  api.down = true;
  await advance(clock, 30_000, [a.elector, b.elector]);
  assert.ok(!bDone && !b.elector.isLeader, "the standby is still campaigning");
  api.down = false;
  const backAt = clock.now();
  while (!b.elector.isLeader) await advance(clock, 100, [a.elector, b.elector]);
  // Its last view of the Lease is older than the lease duration: it takes over at its next try.
  assert.ok(clock.now() - backAt <= 2_400 + 100, `took ${clock.now() - backAt} ms`);
  assert.deepEqual(b.events, ["leader:a", "leader:b", "started"]);
  stopB.abort();
  await bEnded;
});

Deno.test("leaderElector() stops at once when another holder took the lease", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const api = new FakeLeases();
  const { elector } = setup(api, clock, "a");
  const ended = elector.run();
  await elector.elected;
  api.set({
    holderIdentity: "intruder",
    leaseDurationSeconds: 15,
    renewTime: "2001-01-01T00:00:00.000000Z",
  });
  await clock.tickAsync(2_000);
  assert.ok(!elector.isLeader);
  assert.equal(await ended, "lost");
  assert.equal(elector.leader, "intruder");
});

Deno.test("leaderElector() retries after a 409 Conflict", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const api = new FakeLeases();
  api.set({ holderIdentity: "", leaseDurationSeconds: 1 });
  api.conflicts = 1;
  const { elector } = setup(api, clock, "a");
  const stop = new AbortController();
  const ended = elector.run(stop.signal);
  await clock.tickAsync(0);
  assert.ok(!elector.isLeader);
  await clock.tickAsync(2_400);
  assert.ok(elector.isLeader);
  stop.abort();
  await ended;
});

Deno.test("leaderElector() check() fails when the leader's renewals are overdue", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const api = new FakeLeases();
  const { elector } = setup(api, clock, "a");
  const ended = elector.run();
  await elector.elected;
  elector.check();
  clock.tick(20_000); // timers fire but the renew loop gets no chance to run: wedged
  assert.throws(() => elector.check(), /has not renewed for 20000 ms/);
  elector.check(10_000);
  await elector.release();
  await ended;
});

Deno.test("leaderElector() rejects inconsistent durations and elected rejects when never leading", async () => {
  const client = {} as LeaseClient;
  assert.throws(
    () => leaderElector({ client, name: "op", leaseDurationMs: 0 }),
    /leaseDurationMs must be > 0/,
  );
  assert.throws(
    () => leaderElector({ client, name: "op", renewDeadlineMs: 2_000 }),
    /1\.2 × retryPeriodMs/,
  );
  assert.throws(() => leaderElector({ client, name: "" }), TypeError);
  const api = new FakeLeases();
  api.down = true;
  const clock = new FakeClock(0);
  const { elector } = setup(api, clock, "a");
  assert.match(elector.identity, /^a$/);
  assert.match(leaderElector({ client, name: "op" }).identity, /_[0-9a-f-]{36}$/);
  const stop = new AbortController();
  const ended = elector.run(stop.signal);
  await clock.tickAsync(5_000);
  stop.abort();
  assert.equal(await ended, "stopped");
  await assert.rejects(elector.elected);
});
