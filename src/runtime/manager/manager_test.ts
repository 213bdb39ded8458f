// The Manager's lifecycle with a stand-in client (empty lists, watches open until aborted):
// group order around the built-in runnables, leadership gating the `leader` group, and a
// runnable's failure ending start() after everything stopped in reverse order. The tests in
// tests/manager_test.ts run it against a real API server.
import assert from "node:assert/strict";
import type { Client } from "../../client/client.ts";
import { resource } from "../../core/resource.ts";
import { reconcile } from "../controller/reconcile.ts";
import { createManager } from "./manager.ts";
import type { Runnable, RunnableContext } from "./runnable.ts";

const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });

const client = {
  list: () => Promise.resolve({ metadata: { resourceVersion: "1" }, items: [] }),
  async *watchEvents(_res: unknown, o: { signal?: AbortSignal }) {
    await new Promise<void>((resolve) => {
      if (o.signal?.aborted) return resolve();
      o.signal?.addEventListener("abort", () => resolve(), { once: true });
    });
    yield* []; // closed without an event
  },
} as unknown as Client;

function recording(log: string[], contexts?: Map<string, RunnableContext>) {
  return (name: string, group: Runnable["group"]): Runnable => ({
    name,
    group,
    start: (ctx) => {
      contexts?.set(name, ctx);
      log.push(`start ${name}`);
    },
    stop: (reason) => void log.push(`stop ${name} ${reason}`),
  });
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 2));
  assert.ok(cond(), "condition not met");
}

Deno.test("Manager: runnables start by group around the informers; the leader group waits for the election", async () => {
  const log: string[] = [];
  const make = recording(log);
  let elect!: () => void;
  const manager = createManager({
    client,
    controllers: [reconcile(ConfigMap, { reconcile() {} })],
    runnables: [make("work", "leader"), make("tick", "always"), make("probes", "server")],
    startup: () => {
      log.push("startup");
      return Promise.resolve();
    },
    leaderElection: () => new Promise<void>((resolve) => elect = resolve),
  });
  const done = manager.start();
  await until(() => log.includes("start tick") && manager.ready());
  assert.deepEqual(log, ["startup", "start probes", "start tick"]);
  assert.equal(manager.health().leading, false, "not leading before the election");
  assert.equal(manager.runtimes[0].running, false, "no controller before the election");
  elect();
  await until(() => log.includes("start work") && manager.runtimes[0].running);
  assert.equal(manager.health().leading, true);
  await manager.stop();
  await done;
  assert.deepEqual(log.slice(4), ["stop work stop", "stop tick stop", "stop probes stop"]);
  assert.equal(manager.runtimes[0].running, false);
});

Deno.test("Manager: a runnable's failure stops everything in reverse and start() rejects with it", async () => {
  const log: string[] = [];
  const contexts = new Map<string, RunnableContext>();
  const make = recording(log, contexts);
  const manager = createManager({
    client,
    controllers: [reconcile(ConfigMap, { reconcile() {} })],
    runnables: [make("webhooks", "webhook"), make("deadline", "always")],
  });
  const done = manager.start();
  await until(() => manager.runtimes[0]?.running === true);
  contexts.get("deadline")!.fail(new Error("Caches did not sync"));
  await assert.rejects(done, /Caches did not sync/);
  assert.equal(manager.stopping, true);
  assert.deepEqual(log, [
    "start webhooks",
    "start deadline",
    "stop deadline stop",
    "stop webhooks stop",
  ]);
  assert.equal(manager.runtimes[0].running, false, "the controller stopped");
});

Deno.test("Manager: a startup hook that fails ends start() with its error and starts nothing", async () => {
  const log: string[] = [];
  const manager = createManager({
    client,
    controllers: [reconcile(ConfigMap, { reconcile() {} })],
    runnables: [recording(log)("probes", "server")],
    startup: () => Promise.reject(new Error("Widget is not installed")),
  });
  await assert.rejects(manager.start(), /Widget is not installed/);
  assert.deepEqual(log, ["stop probes stop"], "stopped without having started");
});

Deno.test("Manager: a server that cannot start ends start() with its error before the caches run", async () => {
  const log: string[] = [];
  const manager = createManager({
    client,
    controllers: [reconcile(ConfigMap, { reconcile() {} })],
    runnables: [
      {
        name: "probes",
        group: "server",
        start: () => Promise.reject(new Error("Cannot serve probes: the address is in use")),
        stop: () => void log.push("stop probes"),
      },
      recording(log)("webhooks", "webhook"),
    ],
  });
  await assert.rejects(manager.start(), /the address is in use/);
  assert.deepEqual(log, ["stop webhooks stop", "stop probes"], "no later group started");
  assert.equal(manager.informers?.size ?? 0, 1);
  assert.equal([...manager.informers!.all()][0].hasSynced, false, "the informers never ran");
});
