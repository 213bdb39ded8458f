import assert from "node:assert/strict";
import type { Client } from "../../client/client.ts";
import { Lifecycle } from "./_lifecycle.ts";
import { type Runnable, RUNNABLE_GROUPS, type RunnableContext } from "./runnable.ts";

const client = {} as Client;

function recorder() {
  const log: string[] = [];
  const contexts = new Map<string, RunnableContext>();
  const make = (name: string, group: Runnable["group"], start?: () => Promise<void>): Runnable => ({
    name,
    group,
    start: async (ctx) => {
      contexts.set(name, ctx);
      log.push(`start ${name}`);
      await start?.();
    },
    stop: (reason) => void log.push(`stop ${name} ${reason}`),
  });
  return { log, contexts, make };
}

async function startAll(lc: Lifecycle): Promise<void> {
  for (const g of RUNNABLE_GROUPS) await lc.startGroup(g, client);
}

Deno.test("Lifecycle: groups start in order and stop in reverse, every runnable stopped", async () => {
  const stop = new AbortController();
  const lc = new Lifecycle(stop);
  const { log, make } = recorder();
  // Added out of order on purpose: the group decides.
  for (const [name, group] of [...RUNNABLE_GROUPS].reverse().map((g) => [g, g] as const)) {
    await lc.add(make(name, group));
  }
  for (const g of ["server", "webhook", "cache", "always"] as const) {
    await lc.startGroup(g, client);
  }
  assert.equal(lc.started, true);
  await lc.stopAll();
  assert.deepEqual(log, [
    "start server",
    "start webhook",
    "start cache",
    "start always",
    // The leader group never started (no leadership), but it is stopped first all the same.
    "stop leader stop",
    "stop always stop",
    "stop cache stop",
    "stop webhook stop",
    "stop server stop",
  ]);
});

Deno.test("Lifecycle: a failure stops the manager; the first one wins, urgent is kept", async () => {
  const stop = new AbortController();
  const lc = new Lifecycle(stop);
  const { log, contexts, make } = recorder();
  await lc.add(make("informers", "cache"));
  await lc.add(make("elector", "always"));
  await lc.add(make("controller", "leader"));
  await startAll(lc);
  contexts.get("elector")!.fail(new Error("Lost the Lease"), { urgent: true });
  contexts.get("controller")!.fail(new Error("later"));
  assert.equal(stop.signal.aborted, true);
  assert.equal((lc.failure?.error as Error).message, "Lost the Lease");
  assert.equal(lc.failure?.urgent, true);
  await lc.stopAll();
  assert.deepEqual(log.filter((l) => l.startsWith("stop")), [
    "stop controller urgent",
    "stop elector urgent",
    "stop informers urgent",
  ]);
});

Deno.test("Lifecycle: a start that rejects fails the manager; one rejected by the stop does not", async () => {
  const stop = new AbortController();
  const lc = new Lifecycle(stop);
  const { make } = recorder();
  await lc.add(make("port taken", "server", () => Promise.reject(new Error("AddrInUse"))));
  await lc.startGroup("server", client);
  assert.equal((lc.failure?.error as Error).message, "AddrInUse");
  assert.equal(lc.failure?.urgent, false);

  const stop2 = new AbortController();
  const lc2 = new Lifecycle(stop2);
  let abortedStart!: () => void;
  await lc2.add(make("waits", "leader", () =>
    new Promise<void>((_, reject) => {
      abortedStart = () => reject(new Error("aborted"));
    })));
  const starting = lc2.startGroup("leader", client);
  stop2.abort();
  abortedStart();
  await starting;
  assert.equal(lc2.failure, undefined, "a start ended by the stop is no failure");
});

Deno.test("Lifecycle: a runnable added while its group runs starts at once; none after the stop", async () => {
  const stop = new AbortController();
  const lc = new Lifecycle(stop);
  const { log, make } = recorder();
  await startAll(lc);
  await lc.add(make("late informer", "cache"));
  assert.deepEqual(log, ["start late informer"]);
  await lc.stopAll();
  await assert.rejects(lc.add(make("too late", "cache")), /Cannot add runnable "too late"/);
  assert.deepEqual(log, ["start late informer", "stop late informer stop"]);
});

Deno.test("Lifecycle: runnables removed while running stop in reverse group order, once", async () => {
  const stop = new AbortController();
  const lc = new Lifecycle(stop);
  const { log, make } = recorder();
  await lc.add(make("hub", "cache"));
  await startAll(lc);
  // A member engaged at run time: its informers and controller start at once.
  const member = [make("member informers", "cache"), make("member controller", "leader")];
  for (const r of member) await lc.add(r);
  assert.deepEqual(log.splice(0), [
    "start hub",
    "start member informers",
    "start member controller",
  ]);
  await lc.remove(member);
  assert.deepEqual(log.splice(0), ["stop member controller stop", "stop member informers stop"]);
  assert.equal(stop.signal.aborted, false, "the rest runs on");
  await lc.stopAll();
  assert.deepEqual(log, ["stop hub stop"], "a removed runnable is not stopped again");
});
