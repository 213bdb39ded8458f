// Health probes and /metrics served over real HTTP on loopback, fed by informers and a
// client talking to a real kube-apiserver + etcd (one per file). A fault proxy in front of
// the API server stalls the informer's watch.
import assert from "node:assert/strict";
// A test-only dependency, pinned here rather than in deno.json.
// deno-lint-ignore no-import-prefix
import parsePrometheus from "npm:parse-prometheus-text-format@1.1.1";
import { startControlPlane } from "../testing.ts";
import { createClient, type RequestMetric } from "../src/client/client.ts";
import {
  HealthChecks,
  informersSynced,
  serveProbes,
  watchesNotStalled,
} from "../src/runtime/manager/health.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import { Registry, serveMetrics } from "../src/metrics/registry.ts";
import { restClientMetrics } from "../src/metrics/controller_metrics.ts";
import { registerProcessMetrics } from "../src/metrics/process_metrics.ts";
import { uniqueName, viaFaultProxy, waitFor } from "./_helpers.ts";

async function get(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
}

Deno.test("probes and metrics against a real API server", async (t) => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });

  await t.step("/readyz fails before the informer has synced and passes after", async () => {
    const ns = uniqueName("ready");
    await admin.create(Namespace, { metadata: { name: ns } });
    for (let i = 0; i < 20; i++) {
      await admin.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } });
    }
    const cms = informer(ConfigMap, { client: admin, namespace: ns });
    const failures: string[] = [];
    const checks = new HealthChecks({
      onFailure: (kind, results) =>
        failures.push(`${kind}: ${results.filter((r) => !r.ok).map((r) => r.error)}`),
    })
      .addReadyz("informers", informersSynced(() => [cms]))
      .addHealthz("watches", watchesNotStalled(() => [cms]));
    await using server = await serveProbes(checks, { address: "127.0.0.1:0" });
    const base = server!.url;

    const before = await get(`${base}readyz?verbose`);
    assert.equal(before.status, 500);
    assert.equal(before.body, "[-]informers failed: reason withheld\nhealthz check failed\n");
    const one = await get(`${base}readyz/informers`);
    assert.equal(one.status, 500);
    assert.equal(one.body, 'internal server error: Informers not synced: "ConfigMap"\n');
    assert.deepEqual(failures, ['readyz: Informers not synced: "ConfigMap"']);
    assert.equal((await get(`${base}healthz`)).status, 200); // alive while syncing

    cms.start();
    await waitFor(async () => (await get(`${base}readyz`)).status === 200, {
      what: "/readyz to pass",
      timeoutMs: 10_000,
    });
    assert.equal(cms.list().length, 20);
    assert.deepEqual(await get(`${base}readyz`), { status: 200, body: "ok" });
    assert.deepEqual(await get(`${base}readyz?verbose`), {
      status: 200,
      body: "[+]informers ok\nhealthz check passed\n",
    });
    assert.deepEqual(await get(`${base}healthz?verbose&exclude=watches&exclude=nope`), {
      status: 200,
      body:
        '[+]watches excluded: ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nhealthz check passed\n',
    });
    assert.equal((await get(`${base}livez`)).status, 404);
    await cms[Symbol.asyncDispose]();
  });

  await t.step("/healthz fails while a watch is stalled and recovers after", async () => {
    const ns = uniqueName("stall");
    await admin.create(Namespace, { metadata: { name: ns } });
    await using via = await viaFaultProxy(cp);
    const { proxy, client: viaProxy } = via;
    // The watch's own watchdog would restart a stalled watch after stallTimeoutMs; make that
    // longer than the test so only the probe notices.
    await using cms = informer(ConfigMap, {
      client: viaProxy,
      namespace: ns,
      stallTimeoutMs: 120_000,
    }).start();
    await cms.synced();
    const checks = new HealthChecks().addHealthz(
      "watches",
      watchesNotStalled(() => [cms], { maxSilenceMs: 1_000 }),
    );
    await using server = await serveProbes(checks, { address: "127.0.0.1:0" });
    const base = server!.url;

    // A steady trickle of changes, as a busy cluster has.
    const stop = new AbortController();
    let n = 0;
    const writer = (async () => {
      while (!stop.signal.aborted) {
        await admin.create(ConfigMap, { metadata: { name: `cm-${n++}`, namespace: ns } });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      await waitFor(() => cms.list().length >= 3, { what: "events to flow", timeoutMs: 10_000 });
      assert.deepEqual(await get(`${base}healthz`), { status: 200, body: "ok" });

      assert.ok(proxy.stall(true) >= 1, "no connection to stall");
      const stalledAt = Date.now();
      await waitFor(async () => (await get(`${base}healthz`)).status === 500, {
        what: "/healthz to fail",
        timeoutMs: 10_000,
      });
      console.log(`/healthz failed ${Date.now() - stalledAt} ms after the watch stalled`);
      const detail = await get(`${base}healthz/watches`);
      assert.match(detail.body, /Watch stalled: "ConfigMap" silent for \d+ ms/);

      proxy.stall(false);
      await waitFor(async () => (await get(`${base}healthz`)).status === 200, {
        what: "/healthz to recover",
        timeoutMs: 10_000,
      });
    } finally {
      stop.abort();
      await writer;
    }
  });

  await t.step("/metrics scraped during a workload counts every request", async () => {
    const registry = new Registry();
    registerProcessMetrics(registry);
    const count = restClientMetrics(registry);
    const seen: RequestMetric[] = [];
    using client = await createClient({
      kubeconfig: cp.kubeconfigPath,
      onRequest: (m) => {
        seen.push(m);
        count(m);
      },
    });
    await using server = await serveMetrics(registry, { address: "127.0.0.1:0" });
    const ns = uniqueName("metrics");
    await client.create(Namespace, { metadata: { name: ns } });
    const work = (async () => {
      for (let i = 0; i < 30; i++) {
        await client.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } });
        await client.get(ConfigMap, `cm-${i}`, { namespace: ns });
        await client.get(ConfigMap, `missing-${i}`, { namespace: ns }).catch(() => {});
      }
    })();
    // Scrapes while the workload runs must parse.
    for (let i = 0; i < 5; i++) {
      parsePrometheus(await (await fetch(`${server!.url}metrics`)).text());
    }
    await work;
    const text = await (await fetch(`${server!.url}metrics`)).text();
    const families = parsePrometheus(text) as {
      name: string;
      metrics: { value: string; labels: Record<string, string> }[];
    }[];
    const rest = families.find((f) => f.name === "rest_client_requests_total")!;
    const host = new URL(cp.server).host;
    const byKey = (code: string, method: string) =>
      Number(
        rest.metrics.find((m) =>
          m.labels.code === code && m.labels.method === method && m.labels.host === host
        )?.value ?? 0,
      );
    assert.equal(byKey("201", "POST"), 31);
    assert.equal(byKey("200", "GET"), 30);
    assert.equal(byKey("404", "GET"), 30);
    const total = rest.metrics.reduce((sum, m) => sum + Number(m.value), 0);
    assert.equal(total, seen.length);
    for (const name of ["process_resident_memory_bytes", "process_start_time_seconds"]) {
      assert.ok(families.some((f) => f.name === name), `missing ${name}`);
    }
  });
});
