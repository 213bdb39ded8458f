// A bound on one reconcile (`run.timeoutMs`, controller-runtime's `ReconciliationTimeout`)
// against a real kube-apiserver: a reconcile that never settles for one key is cut at its bound (its
// ctx.signal aborts with a TimeoutError, its later write through ctx is refused), counted by
// the timeout hook, retried under the key's growing backoff, and the single worker serves
// the other keys meanwhile.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { ControllerRuntime } from "../src/runtime/controller/pipeline/runner.ts";
import type { ReconcileSample } from "../src/runtime/controller/metrics_hooks.ts";
import { InformerFactory } from "../src/runtime/cache/informer_factory.ts";
import { recordingLimiter, uniqueName, waitFor } from "./_helpers.ts";
import { createNamespace } from "./_stack.ts";

/** One attempt at the hanging key: its signal, and what its write after the abort got. */
interface HangAttempt {
  signal: AbortSignal;
  /** The rejection of its ctx write after the abort; `"sent"` if the write went through. */
  write?: unknown;
  settled: boolean;
}

Deno.test("run.timeoutMs cuts a hung reconcile, frees its worker and retries it with backoff", async () => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  const ns = await createNamespace(client, uniqueName("timeout"));
  const hangKey = `${ns}/hang`;

  const hangs: HangAttempt[] = [];
  // The others' reconciles, each with how many hang attempts had started and were unsettled.
  const others: { name: string; hangsStarted: number; hangsUnsettled: number }[] = [];
  const samples: ReconcileSample[] = [];
  let timeouts = 0;
  const whens = new Map<string, number[]>();

  const controller = reconcile(ConfigMap, {
    name: "cm-timeout",
    run: { maxConcurrent: 1, timeoutMs: 1_000 },
    reconcile(cm, ctx) {
      if (cm.metadata.name !== "hang") {
        others.push({
          name: cm.metadata.name!,
          hangsStarted: hangs.length,
          hangsUnsettled: hangs.filter((h) => !h.settled).length,
        });
        return;
      }
      // Ignores its signal as an error: waits for it, then still tries to write, then hangs.
      const attempt: HangAttempt = { signal: ctx.signal, settled: false };
      hangs.push(attempt);
      const hung = (async () => {
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
        try {
          await ctx.patch(ConfigMap, "hang", {
            metadata: { annotations: { late: "written after the timeout" } },
          });
          attempt.write = "sent";
        } catch (err) {
          attempt.write = err;
        }
        await new Promise(() => {});
      })();
      return hung.finally(() => attempt.settled = true);
    },
  });
  await using informers = new InformerFactory({ client });
  const runtime = new ControllerRuntime(controller, {
    client,
    informers,
    namespaces: [ns],
    rateLimiter: recordingLimiter(whens),
    metrics: {
      timeout: (c) => {
        assert.equal(c, "cm-timeout");
        timeouts++;
      },
      reconcile: (s) => void samples.push(s),
    },
  });
  informers.start();
  await runtime.start();
  let stopped = false;
  try {
    await client.create(ConfigMap, { metadata: { name: "hang", namespace: ns } });
    await waitFor(() => hangs.length === 1, { what: "the first attempt at hang" });
    // Queued while the only worker is held by hang.
    for (const name of ["a", "b", "c"]) {
      await client.create(ConfigMap, { metadata: { name, namespace: ns } });
    }
    await waitFor(() => ["a", "b", "c"].every((n) => others.some((o) => o.name === n)), {
      what: "the other keys to be reconciled while hang is hung",
      timeoutMs: 20_000,
    });
    await waitFor(() => hangs.length >= 4, { what: "hang's fourth attempt", timeoutMs: 30_000 });
    // Queued while hang holds the worker in a later attempt: served after that one is cut.
    await client.create(ConfigMap, { metadata: { name: "d", namespace: ns } });
    await waitFor(() => others.some((o) => o.name === "d"), {
      what: "d to be reconciled while hang is hung",
      timeoutMs: 20_000,
    });

    // The worker served the others while hang's attempts had not settled, and never will.
    for (const name of ["a", "b", "c", "d"]) {
      const o = others.find((o) => o.name === name)!;
      assert.ok(o.hangsStarted >= 1 && o.hangsUnsettled === o.hangsStarted, JSON.stringify(o));
    }
    assert.ok(others.find((o) => o.name === "d")!.hangsStarted >= 4);
    assert.ok(hangs.every((h) => !h.settled), "a hung attempt settled");

    // Read together, synchronously: the cut attempts, counted and retried under backoff.
    const started = hangs.length;
    const cut = hangs.filter((h) => h.signal.aborted).length;
    const requeues = runtime.queue.numRequeues(hangKey);
    assert.ok(cut === started || cut === started - 1, `${cut} cut of ${started}`);
    assert.equal(timeouts, cut, "the timeout hook counts every cut attempt");
    assert.equal(requeues, cut, "each cut attempt is a rate-limited retry");
    const delays = whens.get(hangKey)!;
    assert.equal(delays.length, cut);
    for (let i = 1; i < delays.length; i++) {
      assert.ok(delays[i] > delays[i - 1], `backoff does not grow: ${delays.join(", ")}`);
    }
    assert.equal(whens.get(`${ns}/a`), undefined, "another key was rate-limited");

    // Each cut attempt: a TimeoutError naming the key and the bound, on ctx.signal and as the
    // error the attempt failed with; its write after the abort refused with it, unsent.
    const hangSamples = samples.filter((s) => s.key === hangKey);
    assert.equal(hangSamples.length, cut);
    for (const [i, h] of hangs.filter((h) => h.signal.aborted).entries()) {
      const reason = h.signal.reason as Error;
      assert.equal(reason.name, "TimeoutError");
      assert.equal(reason.message, `Reconcile of "${hangKey}" timed out after 1000 ms`);
      assert.equal(hangSamples[i].result, "error");
      assert.equal(hangSamples[i].error, reason);
      await waitFor(() => h.write !== undefined, { what: `attempt ${i}'s late write to end` });
      assert.equal(h.write, reason, "a write after the timeout was not refused");
    }
    const stored = await client.get(ConfigMap, "hang", { namespace: ns });
    assert.equal(stored.metadata.annotations?.late, undefined, "a late write reached the server");
    assert.ok(samples.filter((s) => s.key !== hangKey).every((s) => s.result === "success"));
  } finally {
    // The attempt in flight is cut at its bound; stop does not wait for hung ones.
    stopped = await runtime.stop(10_000);
  }
  assert.ok(stopped, "stop waited for a hung attempt");
});
