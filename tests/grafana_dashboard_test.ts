// `manifests --grafana` as a user runs it (`deno run -A examples/myapp.ts manifests --grafana`),
// checked against live operators: every metric family a dashboard query (or variable) names is
// one that a running operator's /metrics serves. The Myapp operator (leader election, its
// webhook serving one admission) serves the controller, work-queue, cache, client, webhook,
// leader-election and process families; the sharded fixture operator serves the shard ones.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { freePort } from "../src/testing/process.ts";
import { EXAMPLE_ENV, installExample, startExample, waitFor } from "./_helpers.ts";

const EXAMPLE = new URL("../examples/myapp.ts", import.meta.url).pathname;
const SAMPLE = new URL("../examples/myapp-sample.yaml", import.meta.url).pathname;
const SHARDED = new URL("./fixtures/shard_operator.ts", import.meta.url).pathname;

/** The metric families a scrape holds: the names of its `# TYPE` lines. */
async function scrape(url: string): Promise<Set<string>> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`);
  const text = await res.text();
  return new Set([...text.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1]));
}

/** The families a PromQL expression reads: names before a selector, histogram suffixes cut. */
function familiesOf(expr: string): string[] {
  const names = [
    ...[...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{/g)].map((m) => m[1]),
    ...[...expr.matchAll(/label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)/g)].map((m) => m[1]),
  ];
  return names.map((n) => n.replace(/_(bucket|sum|count)$/, ""));
}

Deno.test("manifests --grafana: every query names a family a live operator serves", async (t) => {
  await using cp = await startControlPlane();
  const kubeconfig = `--kubeconfig=${cp.kubeconfigPath}`;
  const env = { ...EXAMPLE_ENV };
  for (const entry of [EXAMPLE, SHARDED]) await installExample(entry, kubeconfig, env);

  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", EXAMPLE, "manifests", "--grafana"],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const dashboard = JSON.parse(new TextDecoder().decode(out.stdout));
  const exprs: string[] = [
    ...dashboard.panels.flatMap((p: { targets?: { expr: string }[] }) => p.targets ?? [])
      .map((q: { expr: string }) => q.expr),
    ...dashboard.templating.list.map((v: { definition?: string }) => v.definition ?? ""),
  ];
  const wanted = new Set(exprs.flatMap(familiesOf));

  await t.step("the dashboard reads the families the issue names", () => {
    assert.equal(dashboard.title, "myapp-operator (kubeno)");
    for (
      const f of [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds",
        "workqueue_depth",
        "workqueue_queue_duration_seconds",
        "kubeno_cache_objects",
        "controller_runtime_webhook_latency_seconds",
        "kubeno_shard_owned",
      ]
    ) assert.ok(wanted.has(f), `the dashboard queries ${f}`);
    // Depth is shown per priority.
    assert.ok(
      exprs.some((e) => /workqueue_depth.*\bpriority\b|\bpriority\b.*workqueue_depth/.test(e)),
    );
  });

  const myappPort = freePort(), shardPort = freePort();
  const myapp = startExample(EXAMPLE, [
    kubeconfig,
    "--namespace=default",
    "--leader-elect",
    `--metrics-bind-address=127.0.0.1:${myappPort}`,
    "--metrics-secure=false",
    "--health-probe-bind-address=0",
    "--webhook-port=0",
  ], env);
  const sharded = startExample(SHARDED, [
    kubeconfig,
    "--namespace=default",
    `--metrics-bind-address=127.0.0.1:${shardPort}`,
    "--metrics-secure=false",
    "--health-probe-bind-address=0",
  ], env);
  try {
    await t.step("every family the dashboard queries is served", async () => {
      // One admission and one reconcile, so the webhook's and controller's series exist too.
      await waitFor(async () => {
        const r = await cp.kubectl("apply", "-f", SAMPLE);
        if (r.code !== 0) throw new Error(r.stderr.trim());
        return true;
      }, { timeoutMs: 60_000, intervalMs: 250, what: "kubectl apply of the sample" });
      const served = await waitFor(async () => {
        const a = await scrape(`http://127.0.0.1:${myappPort}/metrics`);
        const b = await scrape(`http://127.0.0.1:${shardPort}/metrics`);
        const all = new Set([...a, ...b]);
        return a.has("leader_election_master_status") && b.has("kubeno_shard_owned") && all;
      }, { timeoutMs: 60_000, intervalMs: 500, what: "both operators' /metrics" });
      const missing = [...wanted].filter((f) => !served.has(f));
      assert.deepEqual(missing, [], `families the dashboard queries but no operator serves`);
    });
  } finally {
    await myapp.stop();
    await sharded.stop();
  }
});
