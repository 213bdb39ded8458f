// ShardCoordinator on a FakeClock with a stand-in client that keeps Leases in memory: joining,
// owned shards and the filter as members come and go, losing membership, and leaving. The
// assignment itself and the hash ranges are covered by assignment_test.ts and
// hash_range_test.ts.
import assert from "node:assert/strict";
import { FakeClock } from "../../testing/fake_clock.ts";
import { ApiError } from "../../client/errors/api_error.ts";
import type { Client } from "../../client/client.ts";
import type { RawWatchEvent } from "../../client/types.ts";
import type { Lease } from "../../core/kinds_cluster.ts";
import type { KubeObject } from "../../core/object.ts";
import { ShardCoordinator, type ShardCoordinatorOptions } from "./coordinator.ts";

const NS = "ops";

function statusError(code: number, reason: string, verb: string, name?: string): ApiError {
  return ApiError.fromStatus(
    { verb, kind: "Lease", apiVersion: "coordination.k8s.io/v1", plural: "leases", name },
    code,
    {
      kind: "Status",
      status: "Failure",
      code,
      reason,
      message: `${reason} (stand-in)`,
      details: { name, kind: "leases" },
    },
  );
}

/**
 * Leases in memory behind the part of `Client` the coordinator uses: list and watch (for its
 * Lease informer), get, create, replace (guarded by resourceVersion) and delete (with a
 * resourceVersion precondition). `failWrites` makes writes by a given identity's coordinator
 * fail as a 500 would.
 */
class LeaseServer {
  readonly leases = new Map<string, Lease>();
  #rv = 0;
  readonly #log: { rv: number; type: "ADDED" | "MODIFIED" | "DELETED"; object: Lease }[] = [];
  readonly #wakers = new Set<() => void>();
  /** Names of the Leases whose writes fail while set. */
  readonly failing = new Set<string>();
  /** Watch events of the Leases it matches are held back (a cache that lags), lists are not. */
  withhold: ((lease: Lease) => boolean) | undefined;

  client(): Client {
    const standIn = {
      list: (_res: unknown, o: { labelSelector?: string } = {}) =>
        Promise.resolve({
          metadata: { resourceVersion: String(this.#rv) },
          items: [...this.leases.values()].filter((l) => selects(o.labelSelector, l))
            .map((l) => structuredClone(l)),
        }),
      watchEvents: (_res: unknown, o: { resourceVersion?: string; signal?: AbortSignal }) =>
        this.#watch(o),
      get: (_res: unknown, name: string) => {
        const l = this.leases.get(name);
        return l
          ? Promise.resolve(structuredClone(l))
          : Promise.reject(statusError(404, "NotFound", "get", name));
      },
      create: (_res: unknown, obj: Lease) => {
        const name = obj.metadata.name!;
        if (this.failing.has(name)) {
          return Promise.reject(statusError(500, "InternalError", "create"));
        }
        if (this.leases.has(name)) {
          return Promise.reject(statusError(409, "AlreadyExists", "create", name));
        }
        return Promise.resolve(this.#write("ADDED", obj));
      },
      replace: (_res: unknown, obj: Lease) => {
        const name = obj.metadata.name!;
        const held = this.leases.get(name);
        if (this.failing.has(name)) {
          return Promise.reject(statusError(500, "InternalError", "replace"));
        }
        if (!held) return Promise.reject(statusError(404, "NotFound", "replace", name));
        if (obj.metadata.resourceVersion !== held.metadata.resourceVersion) {
          return Promise.reject(statusError(409, "Conflict", "replace", name));
        }
        return Promise.resolve(this.#write("MODIFIED", obj));
      },
      delete: (
        _res: unknown,
        name: string,
        o: { preconditions?: { resourceVersion?: string } } = {},
      ) => {
        const held = this.leases.get(name);
        if (!held) return Promise.reject(statusError(404, "NotFound", "delete", name));
        const want = o.preconditions?.resourceVersion;
        if (want !== undefined && want !== held.metadata.resourceVersion) {
          return Promise.reject(statusError(409, "Conflict", "delete", name));
        }
        this.remove(name);
        return Promise.resolve(undefined);
      },
    };
    return standIn as unknown as Client;
  }

  /** Stores a Lease as the API server would (new resourceVersion, an event for watchers). */
  put(obj: Lease): Lease {
    return this.#write(this.leases.has(obj.metadata.name!) ? "MODIFIED" : "ADDED", obj);
  }

  /** Deletes a Lease behind the coordinators' backs. */
  remove(name: string): void {
    const held = this.leases.get(name);
    if (!held) return;
    this.leases.delete(name);
    this.#rv++;
    this.#log.push({ rv: this.#rv, type: "DELETED", object: structuredClone(held) });
    this.#wake();
  }

  #write(type: "ADDED" | "MODIFIED", obj: Lease): Lease {
    this.#rv++;
    const stored = structuredClone(obj);
    stored.metadata = { ...stored.metadata, namespace: NS, resourceVersion: String(this.#rv) };
    this.leases.set(stored.metadata.name!, stored);
    this.#log.push({ rv: this.#rv, type, object: structuredClone(stored) });
    this.#wake();
    return structuredClone(stored);
  }

  #wake(): void {
    const wakers = [...this.#wakers];
    this.#wakers.clear();
    for (const w of wakers) w();
  }

  async *#watch(
    o: { resourceVersion?: string; signal?: AbortSignal; onConnected?: () => void },
  ): AsyncGenerator<RawWatchEvent<KubeObject>> {
    let from = Number(o.resourceVersion ?? this.#rv);
    o.onConnected?.();
    while (!o.signal?.aborted) {
      for (const e of this.#log.filter((e) => e.rv > from)) {
        from = e.rv;
        if (this.withhold?.(e.object)) continue;
        yield { type: e.type, object: structuredClone(e.object) };
      }
      await new Promise<void>((resolve) => {
        this.#wakers.add(resolve);
        o.signal?.addEventListener("abort", () => resolve(), { once: true });
      });
    }
  }
}

function selects(selector: string | undefined, lease: Lease): boolean {
  if (!selector) return true;
  return selector.split(",").every((term) => {
    const [k, v] = term.split("=");
    return lease.metadata.labels?.[k] === v;
  });
}

/** Lets the coordinators run (on real macrotasks, the clock standing still) until `cond`. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await FakeClock.runMicrotasks();
  }
  assert.fail(`Timed out waiting for ${what}`);
}

/** Moves the clock in steps of `stepMs`, letting the coordinators run, until `cond`. */
async function advanceUntil(
  clock: FakeClock,
  cond: () => boolean,
  what: string,
  stepMs = 500,
  maxMs = 120_000,
): Promise<void> {
  for (let t = 0; t <= maxMs; t += stepMs) {
    for (let i = 0; i < 20 && !cond(); i++) await FakeClock.runMicrotasks();
    if (cond()) return;
    await clock.tickAsync(stepMs);
  }
  assert.fail(`Timed out waiting for ${what} (after ${maxMs} ms of fake time)`);
}

function coordinator(
  server: LeaseServer,
  clock: FakeClock,
  identity: string,
  extra: Partial<ShardCoordinatorOptions> = {},
): ShardCoordinator {
  return new ShardCoordinator({
    client: server.client(),
    name: "op",
    namespace: NS,
    identity,
    shards: 4,
    clock,
    ...extra,
  });
}

const holderOf = (server: LeaseServer, i: number) =>
  server.leases.get(`op-shard-${i}`)?.spec?.holderIdentity;

Deno.test("ShardCoordinator rejects bad names and timings", () => {
  const server = new LeaseServer();
  const clock = new FakeClock();
  assert.throws(() => coordinator(server, clock, "r1", { name: "" }), TypeError);
  assert.throws(() => coordinator(server, clock, ""), TypeError);
  assert.throws(() => coordinator(server, clock, "r1", { shards: 0 }), RangeError);
  assert.throws(
    () => coordinator(server, clock, "r1", { leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }),
    /lease duration > renew deadline/,
  );
  assert.throws(
    () => coordinator(server, clock, "r1", { renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }),
    RangeError,
  );
});

Deno.test("ShardCoordinator: joining creates its member Lease; alone, it takes every shard and selects them", async () => {
  const server = new LeaseServer();
  const clock = new FakeClock(1_000_000);
  const owned: number[][] = [];
  const r1 = coordinator(server, clock, "r1", {
    metrics: { owned: (s) => void owned.push([...s]) },
  });
  let notified = 0;
  r1.filter.subscribe(() => void notified++);
  assert.equal(r1.filter.selector, null, "nothing owned before joining");
  assert.deepEqual(r1.owned, []);

  const stop = new AbortController();
  const running = r1.run(stop.signal);
  assert.throws(() => r1.run(stop.signal), /twice/);
  await advanceUntil(clock, () => r1.owned.length === 4, "every shard");

  const member = server.leases.get("op-member-r1");
  assert.ok(member, "its member Lease exists");
  assert.equal(member.spec?.holderIdentity, "r1");
  assert.equal(member.spec?.leaseDurationSeconds, 15);
  assert.deepEqual(
    [
      member.metadata.labels?.["shards.kubeno.dev/of"],
      member.metadata.labels?.["shards.kubeno.dev/role"],
    ],
    ["op", "member"],
  );
  assert.deepEqual(r1.members, ["r1"]);
  assert.deepEqual(r1.owned, [0, 1, 2, 3]);
  for (let i = 0; i < 4; i++) {
    assert.equal(holderOf(server, i), "r1");
    assert.equal(
      server.leases.get(`op-shard-${i}`)?.metadata.labels?.["shards.kubeno.dev/shard"],
      String(i),
    );
  }
  assert.deepEqual(owned, [[0, 1, 2, 3]], "taken together: one change");
  assert.equal(notified, 1);
  assert.equal(
    r1.filter.selector,
    "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')",
  );
  assert.ok(r1.filter.matches({ metadata: { name: "x", uid: "any" } }));

  // The next renewal records what it owns on its member Lease.
  await advanceUntil(
    clock,
    () =>
      server.leases.get("op-member-r1")?.metadata.annotations?.["shards.kubeno.dev/shards"] ===
        "0,1,2,3",
    "a renewal with the owned shards",
  );
  assert.equal(
    server.leases.get("op-member-r1")?.metadata.labels?.["shards.kubeno.dev/count"],
    "4",
  );
  r1.check();

  stop.abort();
  assert.equal(await running, "stopped");
});

Deno.test("ShardCoordinator: a sole replica takes its shards on joining, not a renewal later", async () => {
  const server = new LeaseServer();
  const clock = new FakeClock(1_000_000);
  const r1 = coordinator(server, clock, "r1");
  const stop = new AbortController();
  const running = r1.run(stop.signal);
  // The clock stands still: no renewal can come to the rescue.
  await until(() => r1.owned.length === 4, "every shard without a renewal");
  stop.abort();
  assert.equal(await running, "stopped");
});

Deno.test("ShardCoordinator: a second member joins; shards are drained, handed over, and each filter follows", async () => {
  const server = new LeaseServer();
  const clock = new FakeClock(1_000_000);
  const drained: ((obj: KubeObject) => boolean)[] = [];
  const handoffs: string[] = [];
  const r1 = coordinator(server, clock, "r1", {
    drain: (inShards) => (drained.push(inShards), Promise.resolve()),
    metrics: { handoff: (kind, shard) => void handoffs.push(`r1 ${kind} ${shard}`) },
  });
  const r2 = coordinator(server, clock, "r2", {
    metrics: { handoff: (kind, shard) => void handoffs.push(`r2 ${kind} ${shard}`) },
  });
  const selectors: (string | null)[] = [];
  r1.filter.subscribe(() => void selectors.push(r1.filter.selector));
  const stop = new AbortController();
  const running1 = r1.run(stop.signal);
  await advanceUntil(clock, () => r1.owned.length === 4, "r1 owning every shard");
  const whole = r1.filter.selector;

  const running2 = r2.run(stop.signal);
  await advanceUntil(
    clock,
    () => r1.owned.length === 2 && r2.owned.length === 2,
    "two shards each",
  );
  assert.deepEqual([...r1.owned, ...r2.owned].sort(), [0, 1, 2, 3], "every shard has one owner");
  for (const i of r2.owned) assert.equal(holderOf(server, i), "r2");
  for (const i of r1.owned) assert.equal(holderOf(server, i), "r1");
  assert.deepEqual(r1.members, ["r1", "r2"]);
  assert.deepEqual(r2.members, ["r1", "r2"]);

  assert.equal(selectors.length, 2, "r1's listeners heard of both changes");
  assert.equal(selectors[0], whole);
  assert.notEqual(selectors[1], whole);
  assert.equal(selectors[1], r1.filter.selector);
  assert.notEqual(r1.filter.selector, r2.filter.selector);

  // r1 drained exactly the shards it gave away before freeing them.
  assert.equal(drained.length, 1);
  const objects = Array.from(
    { length: 64 },
    (_, i) => ({ metadata: { name: `o${i}`, uid: `u${i}` } }),
  );
  for (const obj of objects) {
    const shard = r1.shardOf(obj);
    assert.equal(drained[0](obj), r2.owned.includes(shard), `drain predicate for shard ${shard}`);
    assert.equal(r1.filter.matches(obj), r1.owned.includes(shard));
    assert.equal(r2.filter.matches(obj), r2.owned.includes(shard));
  }
  assert.deepEqual(
    handoffs.filter((h) => !h.startsWith("r1 acquired")).sort(),
    [...r2.owned.map((i) => `r1 released ${i}`), ...r2.owned.map((i) => `r2 acquired ${i}`)].sort(),
  );

  stop.abort();
  assert.deepEqual(await Promise.all([running1, running2]), ["stopped", "stopped"]);
});

Deno.test("ShardCoordinator: renewals failing past the renew deadline call onLost once and run resolves lost", async () => {
  const server = new LeaseServer();
  const clock = new FakeClock(1_000_000);
  const lost: [string, number][] = [];
  const r1 = coordinator(server, clock, "r1", {
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    onLost: (reason) => void lost.push([reason, clock.now()]),
  });
  let notified = 0;
  r1.filter.subscribe(() => void notified++);
  const stop = new AbortController();
  let end: string | undefined;
  const running = r1.run(stop.signal).then((e) => end = e);
  await advanceUntil(clock, () => r1.owned.length === 4, "every shard");
  // Let one renewal succeed, then fail every later one.
  const renewed = server.leases.get("op-member-r1")!.metadata.resourceVersion;
  await advanceUntil(
    clock,
    () => server.leases.get("op-member-r1")!.metadata.resourceVersion !== renewed,
    "a renewal",
    100,
  );
  const lastRenew = clock.now();
  server.failing.add("op-member-r1");

  await advanceUntil(clock, () => end !== undefined, "run to end", 250);
  assert.equal(await running, "lost");
  assert.equal(lost.length, 1, "onLost called once");
  assert.match(lost[0][0], /no renewal of "op-member-r1" succeeded for 10000 ms/);
  assert.ok(lost[0][1] - lastRenew >= 9_900, "not before the renew deadline");
  assert.ok(lost[0][1] - lastRenew < 15_000, "before others may take its shards");
  assert.deepEqual(r1.owned, [], "reconciling nothing");
  assert.equal(r1.filter.selector, null);
  assert.equal(notified, 2, "listeners heard of the loss");
  assert.throws(() => r1.check(), /membership lost/);

  await clock.tickAsync(60_000);
  assert.equal(lost.length, 1, "still once");
});

Deno.test("ShardCoordinator: a member Lease deleted by another means lost at the next renewal", async () => {
  const server = new LeaseServer();
  const clock = new FakeClock(1_000_000);
  const lost: string[] = [];
  const r1 = coordinator(server, clock, "r1", { onLost: (r) => void lost.push(r) });
  const stop = new AbortController();
  let end: string | undefined;
  const running = r1.run(stop.signal).then((e) => end = e);
  await advanceUntil(clock, () => r1.owned.length === 4, "every shard");
  server.remove("op-member-r1");
  await advanceUntil(clock, () => end !== undefined, "run to end");
  assert.equal(await running, "lost");
  assert.equal(lost.length, 1);
  assert.match(lost[0], /taken over or deleted/);
  assert.deepEqual(r1.owned, []);
});

Deno.test("ShardCoordinator: takes over the shards of a member that stopped renewing, after the lease duration", async () => {
  const server = new LeaseServer();
  const clock = new FakeClock(1_000_000);
  // A replica that died holding every shard: its Leases stay, unrenewed.
  server.put({
    metadata: {
      name: "op-member-ghost",
      labels: { "shards.kubeno.dev/of": "op", "shards.kubeno.dev/role": "member" },
    },
    spec: { holderIdentity: "ghost", leaseDurationSeconds: 15 },
  });
  for (let i = 0; i < 4; i++) {
    server.put({
      metadata: {
        name: `op-shard-${i}`,
        labels: {
          "shards.kubeno.dev/of": "op",
          "shards.kubeno.dev/role": "shard",
          "shards.kubeno.dev/shard": String(i),
        },
      },
      spec: { holderIdentity: "ghost", leaseTransitions: 0 },
    });
  }
  const handoffs: string[] = [];
  const r1 = coordinator(server, clock, "r1", {
    metrics: { handoff: (kind, shard) => void handoffs.push(`${kind} ${shard}`) },
  });
  const stop = new AbortController();
  const running = r1.run(stop.signal);
  const joinedAt = clock.now();
  await until(() => r1.members.length === 2, "r1 to see the ghost");
  assert.deepEqual(r1.members, ["ghost", "r1"], "live until it is seen silent for the duration");
  assert.deepEqual(r1.owned, [], "shards held by a live member are not taken");

  await advanceUntil(clock, () => r1.owned.length === 4, "the take-over");
  assert.ok(clock.now() - joinedAt >= 15_000, "only after the lease duration");
  assert.deepEqual(r1.members, ["r1"]);
  assert.equal(server.leases.has("op-member-ghost"), false, "the silent member was fenced");
  for (let i = 0; i < 4; i++) {
    assert.equal(holderOf(server, i), "r1");
    assert.equal(server.leases.get(`op-shard-${i}`)?.spec?.leaseTransitions, 1);
  }
  assert.deepEqual(handoffs.sort(), [0, 1, 2, 3].map((i) => `took-over ${i}`));

  stop.abort();
  assert.equal(await running, "stopped");
});

Deno.test("ShardCoordinator.run resolves stopped on abort, after freeing its shards and deleting its member Lease", async () => {
  const server = new LeaseServer();
  const clock = new FakeClock(1_000_000);
  let lost = 0;
  const r1 = coordinator(server, clock, "r1", { onLost: () => void lost++ });
  const stop = new AbortController();
  const running = r1.run(stop.signal);
  await advanceUntil(clock, () => r1.owned.length === 4, "every shard");
  stop.abort();
  assert.equal(await running, "stopped");
  assert.equal(lost, 0, "leaving is not losing");
  assert.equal(server.leases.has("op-member-r1"), false);
  for (let i = 0; i < 4; i++) assert.equal(holderOf(server, i), "", `shard ${i} is free`);
  assert.deepEqual(r1.owned, []);
  assert.equal(r1.filter.selector, null);
  assert.equal(clock.pending, 0, "no timer left behind");
});

Deno.test("ShardCoordinator.run frees on abort the shards it took that its cache has not shown yet", async () => {
  const server = new LeaseServer();
  const clock = new FakeClock(1_000_000);
  const r0 = coordinator(server, clock, "r0");
  const stop0 = new AbortController();
  const running0 = r0.run(stop0.signal);
  await advanceUntil(clock, () => r0.owned.length === 4, "r0 to hold every shard");
  stop0.abort();
  assert.equal(await running0, "stopped");
  // The free shard Leases are cached as such; what r1 writes to them never reaches its cache.
  server.withhold = (lease) => lease.metadata.name!.includes("-shard-");
  const r1 = coordinator(server, clock, "r1");
  const stop1 = new AbortController();
  const running1 = r1.run(stop1.signal);
  await advanceUntil(clock, () => r1.owned.length === 4, "r1 to take every shard");
  for (let i = 0; i < 4; i++) assert.equal(holderOf(server, i), "r1");
  stop1.abort();
  assert.equal(await running1, "stopped");
  for (let i = 0; i < 4; i++) assert.equal(holderOf(server, i), "", `shard ${i} is free`);
});

Deno.test("ShardCoordinator named: one shard per name, balanced over members and sticky as names and members change", async () => {
  const server = new LeaseServer();
  const clock = new FakeClock(1_000_000);
  let names = ["c-a", "c-b", "c-c", "c-d"];
  const drained: string[] = [];
  const named = { keys: () => names };
  const r1 = coordinator(server, clock, "r1", {
    named,
    drain: (inShards) => {
      for (const n of names) if (inShards({ metadata: { name: n } })) drained.push(n);
      return Promise.resolve();
    },
  });
  const r2 = coordinator(server, clock, "r2", { named });
  const stop = new AbortController();
  const running1 = r1.run(stop.signal);
  await advanceUntil(clock, () => r1.ownedNames.length === 4, "r1 owning the four names");
  assert.deepEqual(r1.owned, [], "no indexed shards in named mode");
  assert.equal(r1.filter.selector, null);
  assert.ok(r1.filter.matches({ metadata: { name: "c-a" } }));
  assert.ok(!r1.filter.matches({ metadata: { name: "c-z" } }));

  const running2 = r2.run(stop.signal);
  await advanceUntil(
    clock,
    () => r1.ownedNames.length === 2 && r2.ownedNames.length === 2,
    "two names each",
  );
  const kept = r1.ownedNames;
  assert.deepEqual([...kept, ...r2.ownedNames].sort(), names);
  assert.deepEqual(drained.sort(), r2.ownedNames, "r1 drained exactly the names it gave away");

  // A fifth name goes to one of them; removing a name of r2 leaves r1's alone, and its
  // Lease is deleted.
  names = [...names, "c-e"];
  r1.refresh();
  r2.refresh();
  await advanceUntil(
    clock,
    () => r1.ownedNames.length + r2.ownedNames.length === 5,
    "the fifth name taken",
  );
  for (const n of kept) assert.ok(r1.ownedNames.includes(n), `${n} stayed with r1`);
  const gone = r2.ownedNames[0];
  const leasesBefore = server.leases.size;
  names = names.filter((n) => n !== gone);
  r1.refresh();
  r2.refresh();
  await advanceUntil(
    clock,
    () => !r2.ownedNames.includes(gone) && server.leases.size === leasesBefore - 1,
    `${gone} released and its Lease deleted`,
  );
  for (const n of kept) assert.ok(r1.ownedNames.includes(n), `${n} still with r1`);
  const counts = [r1.ownedNames.length, r2.ownedNames.length].sort();
  assert.deepEqual(counts, [2, 2], `balanced: ${r1.ownedNames} / ${r2.ownedNames}`);

  stop.abort();
  assert.deepEqual(await Promise.all([running1, running2]), ["stopped", "stopped"]);
});
