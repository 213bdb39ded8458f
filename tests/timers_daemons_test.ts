// Timers and daemons against a real kube-apiserver: a timer runs on every ConfigMap at its
// interval (counted) and stops for a deleted one; a daemon's signal aborts when its object is
// deleted, when the manager loses its Lease, and when the operator process gets SIGTERM; a
// daemon that throws is restarted with backoff.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import { createManager, LeadershipLostError } from "../src/runtime/manager/manager.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { daemon, every } from "../src/runtime/source/timers.ts";
import { startExample, uniqueName, waitFor } from "./_helpers.ts";

const FIXTURE = new URL("./fixtures/daemon_operator.ts", import.meta.url).pathname;

/** Waits for the signal, then says why it aborted. */
function aborted(signal: AbortSignal): Promise<string> {
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve((signal.reason as Error).message), {
      once: true,
    })
  );
}

Deno.test("timers and daemons per object", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath });

  await t.step("a timer runs on every object at its interval, not on deleted ones", async () => {
    const ns = uniqueName("timer");
    await client.create(Namespace, { metadata: { name: ns } });
    for (const name of ["a", "b"]) {
      await client.create(ConfigMap, { metadata: { name, namespace: ns } });
    }
    const ticks = new Map<string, number[]>();
    const count = (name: string) => ticks.get(`${ns}/${name}`)?.length ?? 0;
    const ended = new Map<string, string>();
    const manager = createManager({
      client,
      namespaces: [ns],
      controllers: [reconcile(ConfigMap, {
        sources: [
          every(200, (_cm, ctx) => {
            ticks.set(ctx.key, [...ticks.get(ctx.key) ?? [], Date.now()]);
          }, { jitter: 0.1 }),
          daemon(async (_cm, ctx) => void ended.set(ctx.key, await aborted(ctx.signal))),
        ],
        reconcile() {},
      })],
    });
    const done = manager.start();
    try {
      await waitFor(() => count("a") >= 5 && count("b") >= 5, { what: "5 ticks on each object" });
      const gaps = ticks.get(`${ns}/a`)!.map((at, i, all) => i ? at - all[i - 1] : 0).slice(1);
      console.log(`timer every(200, jitter 0.1) on a: gaps ${gaps.join(", ")} ms`);
      await client.delete(ConfigMap, "a", { namespace: ns });
      await waitFor(() => ended.has(`${ns}/a`), { what: "a's daemon signal" });
      assert.equal(ended.get(`${ns}/a`), `Object "${ns}/a" was deleted`);
      const a = count("a");
      const b = count("b");
      await waitFor(() => count("b") >= b + 5, { what: "5 more ticks on b" });
      assert.equal(count("a"), a, "no tick on a after it was deleted");
      assert.ok(!ended.has(`${ns}/b`), "b's daemon runs on");
      console.log(`after a was deleted: a ${a} → ${count("a")} ticks, b ${b} → ${count("b")}`);
    } finally {
      await manager.stop();
      await done;
    }
    assert.equal(ended.get(`${ns}/b`), 'Controller "configmap" stopped: shutting down');
  });

  await t.step("a throwing daemon is restarted with backoff", async () => {
    const ns = uniqueName("restart");
    await client.create(Namespace, { metadata: { name: ns } });
    await client.create(ConfigMap, { metadata: { name: "x", namespace: ns } });
    const starts: number[] = [];
    const manager = createManager({
      client,
      namespaces: [ns],
      controllers: [reconcile(ConfigMap, {
        sources: [daemon(() => {
          starts.push(Date.now());
          throw new Error("Cannot reach the backend");
        }, { backoffMs: 100, maxBackoffMs: 400 })],
        reconcile() {},
      })],
    });
    const done = manager.start();
    try {
      await waitFor(() => starts.length >= 5, { what: "5 starts of the daemon" });
    } finally {
      await manager.stop();
      await done;
    }
    // The schedule itself (1, 2, 4... times backoffMs) is checked on a fake clock in
    // src/runtime/source/background_test.ts; here it is only shown.
    const gaps = starts.slice(1, 5).map((at, i) => at - starts[i]);
    console.log(`restart gaps (backoff 100 ms doubling to 400 ms): ${gaps.join(", ")} ms`);
  });

  await t.step("a daemon's signal aborts when the Lease is lost", async () => {
    const ns = uniqueName("lease");
    await client.create(Namespace, { metadata: { name: ns } });
    await client.create(ConfigMap, { metadata: { name: "x", namespace: ns } });
    let reason: Promise<string> | undefined;
    const manager = createManager({
      client,
      namespaces: [ns],
      leaderElection: {
        name: "daemons",
        namespace: ns,
        identity: "me",
        leaseDurationMs: 4_000,
        renewDeadlineMs: 3_000,
        retryPeriodMs: 500,
      },
      controllers: [reconcile(ConfigMap, {
        sources: [daemon(async (_cm, ctx) => void (await (reason = aborted(ctx.signal))))],
        reconcile() {},
      })],
    });
    const done = manager.start();
    await waitFor(() => reason !== undefined, { what: "the daemon to start on the leader" });
    // Another holder takes the Lease (retrying when a renewal races the update).
    const path = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/daemons`;
    await waitFor(async () => {
      const lease = (await cp.request("GET", path)).body;
      const now = new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
      const spec = { ...lease.spec, holderIdentity: "intruder", renewTime: now };
      return (await cp.request("PUT", path, { ...lease, spec })).status === 200;
    }, { what: "the Lease to be taken" });
    await assert.rejects(done, LeadershipLostError);
    assert.equal(await reason, 'Controller "configmap" stopped: leadership lost');
  });

  await t.step("a daemon's signal aborts on SIGTERM of the operator", async () => {
    const ns = uniqueName("sigterm");
    await client.create(Namespace, { metadata: { name: ns } });
    await client.create(ConfigMap, {
      metadata: { name: "x", namespace: ns, labels: { "daemon.kubeno.dev/watch": "yes" } },
    });
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const metricsPort = l.addr.port;
    l.close();
    const op = startExample(FIXTURE, [
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      "--metrics-secure=false",
      "--health-probe-bind-address=0",
      "--watch-namespace",
      ns,
    ], { NO_COLOR: "1", KUBECONFIG: cp.kubeconfigPath });
    let status: Deno.CommandStatus | undefined;
    try {
      await waitFor(() => op.lines(new RegExp(`Watching ${ns}/x`)).length > 0, {
        what: `the daemon to start:\n${op.logs()}`,
      });
      // Counted like reconciles: one daemon running.
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const running = metrics.split("\n").find((m) =>
        m.startsWith('kubeno_controller_daemons_running{controller="watcher",name="watcher"}')
      );
      console.log(running);
      assert.equal(running?.slice(running.lastIndexOf(" ") + 1), "1", metrics);
    } finally {
      status = await op.stop("SIGTERM");
    }
    assert.equal(status.code, 0, op.logs());
    const line = op.lines(new RegExp(`Daemon watcher of ${ns}/x ended`));
    console.log(line[0]);
    assert.match(line[0] ?? op.logs(), /stopped: shutting down/);
  });
});
