// Fair work against a real kube-apiserver: a controller starts with 2,000 ConfigMaps cached,
// so its initial list queues 2,000 keys; a user's edit made during that storm is reconciled
// before the storm drains (its position is reported), because keys from the initial list
// wait behind real changes. With the priority queue off, the same edit waits behind the
// storm. And a storm never holds every worker: with its reconciles hanging on 3 of 4 workers,
// the fourth (kept for changes) serves the edit; with none kept, the edit waits. One control
// plane for the file.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { createManager } from "../src/runtime/manager/manager.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import { mapConcurrent, uniqueName, waitFor } from "./_helpers.ts";

const N = 2_000;
const name = (i: number) => `cm-${String(i).padStart(4, "0")}`;

interface Storm {
  /** How many reconciles ran before the edited object's edit was reconciled. */
  position: number;
  /** Keys of the initial list still queued at that moment. */
  queuedThen: number;
}

/** Runs one controller over the namespace's N ConfigMaps, edits the last one mid-storm. */
async function storm(client: Client, ns: string, priorityQueue: boolean): Promise<Storm> {
  const order: string[] = [];
  let edited: Storm | undefined;
  const edit = uniqueName("v");
  const manager = createManager({
    client,
    namespaces: [ns],
    priorityQueue,
    controllers: [reconcile(ConfigMap, {
      async reconcile(cm, ctx) {
        order.push(ctx.key);
        if (cm.data?.v === edit && !edited) {
          edited = { position: order.length, queuedThen: manager.runtimes[0].queue.len() };
        }
        // The converge work of a real reconcile: a little time per object.
        await new Promise((r) => setTimeout(r, 2));
      },
    })],
  });
  const done = manager.start();
  try {
    await waitFor(() => order.length >= 20, { what: "the storm to begin" });
    // The last object of the list: a FIFO reaches it last.
    await client.patch(ConfigMap, name(N - 1), { data: { v: edit } }, { namespace: ns });
    await waitFor(() => edited !== undefined, {
      what: "the edit to be reconciled",
      timeoutMs: 120_000,
    });
    await waitFor(() => order.length >= N && manager.runtimes[0].queue.len() === 0, {
      what: "the storm to drain",
      timeoutMs: 120_000,
    });
    return edited!;
  } finally {
    await manager.stop();
    await done;
  }
}

Deno.test("a user's edit during the start-up storm is served before the storm drains", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const ns = uniqueName("storm");
  await client.create(Namespace, { metadata: { name: ns } });
  await mapConcurrent(
    Array.from({ length: N }, (_, i) => i),
    16,
    (i) => client.create(ConfigMap, { metadata: { name: name(i), namespace: ns } }),
  );

  await t.step("with the priority queue (the default)", async () => {
    const s = await storm(client, ns, true);
    console.log(
      `priority queue: the edit was reconciled ${s.position}th of ${N}, ` +
        `with ${s.queuedThen} keys of the storm still queued`,
    );
    assert.ok(s.queuedThen > 0, "the storm had drained before the edit was served");
    assert.ok(s.position < N / 2, `served ${s.position}th`);
  });

  await t.step("without it, the edit waits behind the storm", async () => {
    const s = await storm(client, ns, false);
    console.log(
      `FIFO: the edit was reconciled ${s.position}th of ${N}, ` +
        `with ${s.queuedThen} keys of the storm still queued`,
    );
    assert.ok(s.position > N * 0.9, `served ${s.position}th`);
  });

  await t.step(
    "with 4 workers (one kept by default), an edit is served while 3 storm reconciles hang",
    async () => {
      const r = await hungStorm(client, ns, { maxConcurrent: 4 });
      console.log(`kept worker: edit served ${r.servedWhileHung}, storm reconciles hung ${r.hung}`);
      assert.equal(
        r.hung,
        3,
        "storm reconciles on more than maxConcurrent - reservedWorkers workers",
      );
      assert.ok(r.servedWhileHung, "the edit waited behind hung storm reconciles");
    },
  );

  await t.step(
    "with reservedWorkers: 0 the storm holds every worker and the edit waits",
    async () => {
      const r = await hungStorm(client, ns, { maxConcurrent: 4, reservedWorkers: 0 });
      console.log(
        `no kept worker: edit served ${r.servedWhileHung}, storm reconciles hung ${r.hung}`,
      );
      assert.equal(r.hung, 4);
      assert.equal(r.servedWhileHung, false);
    },
  );
});

/**
 * Runs a controller with `workers` workers whose storm reconciles all hang until released,
 * edits one object, and says whether the edit was reconciled while every storm reconcile
 * still hung.
 */
async function hungStorm(
  client: Client,
  ns: string,
  workers: { maxConcurrent: number; reservedWorkers?: number },
): Promise<{ servedWhileHung: boolean; hung: number }> {
  const edit = uniqueName("v");
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let hung = 0;
  let edited = false;
  const manager = createManager({
    client,
    namespaces: [ns],
    controllers: [reconcile(ConfigMap, {
      run: workers,
      async reconcile(cm) {
        if (cm.data?.v === edit) {
          edited = true;
          return;
        }
        hung++;
        await released;
      },
    })],
  });
  const done = manager.start();
  try {
    const storm = workers.maxConcurrent - (workers.reservedWorkers ?? 1);
    await waitFor(() => hung >= storm, { what: `${storm} storm reconciles to hang` });
    await client.patch(ConfigMap, name(N - 1), { data: { v: edit } }, { namespace: ns });
    // Either a worker serves the edit, or the edit's event raised the key (last in the
    // initial list) to the head of the queue, ahead of the storm's keys: a worker waiting for
    // changes would have been handed it at once, so queued at the head means every worker
    // that could take it hangs in the storm.
    const key = `${ns}/${name(N - 1)}`;
    await waitFor(
      () => edited || manager.runtimes[0].queue.waiting()[0] === key,
      { what: "the edit to be served or queued" },
    );
    return { servedWhileHung: edited, hung };
  } finally {
    release();
    await manager.stop();
    await done;
  }
}
