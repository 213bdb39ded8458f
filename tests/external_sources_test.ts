// External sources against a real kube-apiserver: keys pushed from an async iterable are
// reconciled, deduplicated by the work queue (nine pushes while the one worker is busy give one
// reconcile per key), a key with no object is dropped, and "reconcile all" (from an iterable
// and from the manager) reconciles every cached primary once more.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import { createManager } from "../src/runtime/manager/manager.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { reconcileAllOn, reconcileOn } from "../src/runtime/source/external.ts";
import { uniqueName, waitFor } from "./_helpers.ts";

/** An async iterable the test pushes to; `taken` counts the items read from it. */
function channel<T>() {
  const items: T[] = [];
  let wake: (() => void) | undefined;
  const ch = {
    taken: 0,
    push(...xs: T[]) {
      items.push(...xs);
      wake?.();
    },
    async *[Symbol.asyncIterator](): AsyncGenerator<T> {
      for (;;) {
        while (items.length) {
          ch.taken++;
          yield items.shift()!;
        }
        await new Promise<void>((r) => wake = r);
      }
    },
  };
  return ch;
}

Deno.test("keys from an async iterable are reconciled, deduplicated", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });
  const ns = uniqueName("ext");
  await client.create(Namespace, { metadata: { name: ns } });
  for (const name of ["a", "b", "c"]) {
    await client.create(ConfigMap, { metadata: { name, namespace: ns } });
  }
  const keys = channel<string | { namespace: string; name: string }>();
  const all = channel<unknown>();
  const counts = new Map<string, number>();
  const count = (name: string) => counts.get(`${ns}/${name}`) ?? 0;
  let gate: Promise<void> | undefined;
  const manager = createManager({
    client,
    namespaces: [ns],
    controllers: [reconcile(ConfigMap, {
      sources: [reconcileOn(keys), reconcileAllOn(all)],
      async reconcile(_cm, ctx) {
        counts.set(ctx.key, (counts.get(ctx.key) ?? 0) + 1);
        if (ctx.key === `${ns}/a`) await gate;
      },
    })],
  });
  const done = manager.start();
  try {
    await waitFor(() => count("a") === 1 && count("b") === 1 && count("c") === 1, {
      what: "the first reconcile of each ConfigMap",
    });

    await t.step("pushed keys are reconciled, each once per time it waits", async () => {
      let open!: () => void;
      gate = new Promise((r) => open = r);
      keys.push(`${ns}/a`);
      await waitFor(() => count("a") === 2, { what: "a's reconcile from the source to start" });
      // The one worker is busy with a: these wait in the queue, deduplicated.
      keys.push(`${ns}/a`, `${ns}/a`, `${ns}/b`, { namespace: ns, name: "b" }, `${ns}/a`);
      keys.push(`${ns}/b`, `${ns}/a`, `${ns}/gone`);
      await waitFor(() => keys.taken === 9, { what: "the source to read every key" });
      open();
      await waitFor(() => count("a") === 3 && count("b") === 2, {
        what: `a and b reconciled again (a ${count("a")}, b ${count("b")})`,
      });
      // Settled: nothing more comes from those nine pushes.
      keys.push(`${ns}/c`);
      await waitFor(() => count("c") === 2, { what: "c from the source" });
      assert.equal(count("a"), 3, "a: 1 (start) + 1 (pushed) + 1 (five pushes while busy)");
      assert.equal(count("b"), 2, "b: 1 (start) + 1 (three pushes while queued)");
      assert.equal(count("gone"), 0, "a key with no object is not reconciled");
      console.log(
        `9 keys pushed while busy → a reconciled ${count("a") - 2} more, b ${count("b") - 1}`,
      );
    });

    await t.step("reconcile all, from an iterable and on demand", async () => {
      all.push("rotated");
      await waitFor(() => count("a") === 4 && count("b") === 3 && count("c") === 3, {
        what: "every ConfigMap reconciled once more",
      });
      assert.equal(manager.reconcileAll(), 3);
      await waitFor(() => count("a") === 5 && count("b") === 4 && count("c") === 4, {
        what: "every ConfigMap reconciled on demand",
      });
      assert.throws(() => manager.reconcileAll("nope"), /no such controller/);
    });
  } finally {
    await manager.stop();
    await done;
  }
});
