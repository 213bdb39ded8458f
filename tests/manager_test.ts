// The manager against a real kube-apiserver: graceful shutdown of a real process on SIGTERM
// mid-load, leader-election gating, readiness/health, namespace scoping, shared informers,
// metrics hooks and the shutdown deadline.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import type { ReconcileSample } from "../src/runtime/controller/metrics_hooks.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { createManager } from "../src/runtime/manager/manager.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { mapConcurrent, uniqueName, waitFor } from "./_helpers.ts";
import { createNamespace } from "./_stack.ts";

const FIXTURE = new URL("./fixtures/slow_manager.ts", import.meta.url).pathname;
const ROOT = new URL("..", import.meta.url).pathname;

/** Collects a stream's lines into `lines`; resolves at its end. */
async function collectLines(stream: ReadableStream<Uint8Array>, lines: string[]): Promise<void> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop()!;
    lines.push(...parts);
  }
  if (rest) lines.push(rest);
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  return { promise, resolve };
}

Deno.test("manager against a real API server", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });

  await t.step("SIGTERM mid-load: in-flight reconciles finish, exit code 0", async () => {
    const ns = await createNamespace(client, uniqueName("sigterm"));
    const n = 40;
    await mapConcurrent(
      Array.from({ length: n }, (_, i) => i),
      16,
      (i) => client.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } }),
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", FIXTURE, cp.kubeconfigPath, ns, "500"],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const out: string[] = [];
    const err: string[] = [];
    const reading = Promise.all([collectLines(child.stdout, out), collectLines(child.stderr, err)]);
    try {
      // Two batches of four workers have started: at least four reconciles are in flight.
      await waitFor(() => out.filter((l) => l.startsWith("started ")).length >= 6, {
        what: "reconciles to start",
      });
      child.kill("SIGTERM");
      const status = await Promise.race([
        child.status,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error("The manager did not exit in 30 s")), 30_000)
        ),
      ]);
      await reading;
      assert.equal(status.code, 0, `exit code ${status.code}; stderr: ${err.join("\n")}`);
      assert.equal(out.at(-1), "stopped");
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* already exited */ }
    }
    const cms = (await client.list(ConfigMap, { namespace: ns })).items
      .filter((cm) => cm.metadata.name!.startsWith("cm-"));
    const started = cms.filter((cm) => cm.metadata.annotations?.started);
    const halfDone = started.filter((cm) =>
      cm.metadata.annotations?.finished !== cm.metadata.annotations?.started
    );
    console.log(`SIGTERM: ${started.length} of ${n} reconciles started, all of them finished`);
    assert.deepEqual(halfDone.map((cm) => cm.metadata.name), [], "reconciles left half done");
    assert.ok(started.length >= 6 && started.length < n, `${started.length} started`);
  });

  await t.step(
    "leadership gates controllers; readiness, health, namespaces, shared informers, metrics",
    async () => {
      const ns = await createNamespace(client, uniqueName("lead"));
      const other = await createNamespace(client, uniqueName("other"));
      for (const namespace of [ns, other]) {
        await client.create(ConfigMap, { metadata: { name: "a", namespace } });
        await client.create(ConfigMap, { metadata: { name: "b", namespace } });
      }
      const seen: string[] = [];
      const seen2: string[] = [];
      const samples: ReconcileSample[] = [];
      let adds = 0;
      const elected = deferred();
      let leaderSignal: AbortSignal | undefined;
      const manager = createManager({
        client,
        namespaces: [ns],
        controllers: [
          reconcile(ConfigMap, { reconcile: (_cm, ctx) => void seen.push(ctx.key) }),
          reconcile(ConfigMap, {
            name: "second",
            reconcile: (_cm, ctx) => void seen2.push(ctx.key),
          }),
        ],
        leaderElection: async ({ signal }) => {
          leaderSignal = signal;
          await elected.promise;
        },
        metrics: {
          reconcile: (s) => void samples.push(s),
          workqueue: () => ({ add: () => void adds++ }),
        },
      });
      const stop = new AbortController();
      const done = manager.start(stop.signal);
      try {
        await waitFor(() => manager.ready(), { what: "the manager to be ready" });
        assert.ok(manager.healthy());
        const health = manager.health();
        assert.equal(health.leading, false);
        assert.equal(health.informers.length, 1, "two controllers on one kind share one informer");
        assert.equal(manager.informers?.size, 1);
        assert.ok(adds >= 4, "events were not queued while waiting for leadership");
        assert.deepEqual(seen, [], "reconciled before being elected");
        elected.resolve();
        await waitFor(() => seen.length === 2 && seen2.length === 2, { what: "reconciles" });
        assert.deepEqual(seen.sort(), [`${ns}/a`, `${ns}/b`]);
        assert.deepEqual(seen2.sort(), [`${ns}/a`, `${ns}/b`]);
        assert.equal(manager.health().leading, true);
        assert.deepEqual(
          samples.map((s) => `${s.controller} ${s.result}`).sort(),
          ["configmap success", "configmap success", "second success", "second success"],
        );
        assert.ok(samples.every((s) => s.seconds >= 0));
      } finally {
        stop.abort();
        await done;
      }
      assert.ok(leaderSignal?.aborted, "the leader election hook's signal was not aborted");
      assert.equal(manager.ready(), false);
    },
  );

  await t.step("shutdown waits for in-flight reconciles, up to the deadline", async () => {
    const ns = await createNamespace(client, uniqueName("drain"));
    await client.create(ConfigMap, { metadata: { name: "slow", namespace: ns } });
    await client.create(ConfigMap, { metadata: { name: "stuck", namespace: ns } });
    const entered = new Set<string>();
    let slowFinished = false;
    let stuckAborted = false;
    const manager = createManager({
      client,
      namespaces: [ns],
      shutdownTimeoutMs: 300,
      controllers: [reconcile(ConfigMap, {
        run: { maxConcurrent: 2 },
        async reconcile(cm, ctx) {
          entered.add(cm.metadata.name!);
          if (cm.metadata.name === "slow") {
            await new Promise((r) => setTimeout(r, 100));
            slowFinished = true;
            return;
          }
          await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
          stuckAborted = true;
        },
      })],
    });
    const stop = new AbortController();
    const done = manager.start(stop.signal);
    await waitFor(() => entered.size === 2, { what: "both reconciles to start" });
    stop.abort();
    await done;
    assert.ok(slowFinished, "shutdown did not wait for the in-flight reconcile");
    await waitFor(() => stuckAborted, { what: "the stuck reconcile's signal to abort" });
  });

  await t.step("losing leadership shuts down and rejects", async () => {
    const ns = await createNamespace(client, uniqueName("lost"));
    let lose!: (reason: unknown) => void;
    const manager = createManager({
      client,
      namespaces: [ns],
      controllers: [reconcile(ConfigMap, { reconcile() {} })],
      leaderElection: ({ lost }) => {
        lose = lost;
        return Promise.resolve();
      },
    });
    const done = manager.start();
    await waitFor(() => manager.health().leading && manager.ready(), { what: "leading" });
    lose(new Error("Lease taken over"));
    await assert.rejects(done, (e: Error) => {
      assert.match(e.message, /leadership was lost/);
      assert.equal((e.cause as Error).message, "Lease taken over");
      return true;
    });
  });

  await t.step(
    "a controller whose kind is not served waits, and the manager stays stoppable",
    async () => {
      const Ghost = {
        ...ConfigMap,
        group: "ghosts.kubeno.dev",
        apiVersion: "ghosts.kubeno.dev/v1",
        kind: "Ghost",
        plural: "ghosts",
      };
      const manager = createManager({
        client,
        controllers: [reconcile(Ghost, { reconcile() {} })],
      });
      const stop = new AbortController();
      const done = manager.start(stop.signal);
      await waitFor(() => manager.health().informers[0]?.health.error, {
        what: "the informer error",
      });
      assert.equal(manager.ready(), false);
      stop.abort();
      await done;
    },
  );
});
