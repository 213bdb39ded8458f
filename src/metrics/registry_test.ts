import assert from "node:assert/strict";
// A test-only dependency, pinned here rather than in deno.json (which publishing would carry).
// deno-lint-ignore no-import-prefix
import parsePrometheus from "npm:parse-prometheus-text-format@1.1.1";
import { FakeClock } from "../testing/fake_clock.ts";
import { formatValue, METRICS_CONTENT_TYPE, Registry, serveMetrics } from "./registry.ts";
import {
  controllerMetrics,
  leaderElectionMetrics,
  restClientMetrics,
  workqueueMetrics,
} from "./controller_metrics.ts";
import { registerProcessMetrics } from "./process_metrics.ts";
import { WorkQueue } from "../runtime/queue/workqueue.ts";

interface Parsed {
  name: string;
  help: string;
  type: string;
  metrics: {
    value?: string;
    labels?: Record<string, string>;
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }[];
}

async function scrape(registry: Registry): Promise<Map<string, Parsed>> {
  const families = parsePrometheus(await registry.metrics()) as Parsed[];
  return new Map(families.map((f) => [f.name, f]));
}

/**
 * One labelled histogram series, parsed. parse-prometheus-text-format collapses labelled
 * histograms into one series and drops their `_sum`/`_count`, so the series' lines are
 * picked out, their labels other than `le` removed, and that text parsed.
 */
function histogram(text: string, name: string, labels: Record<string, string>) {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(",");
  const lines = text.split("\n").filter((l) =>
    l.startsWith(`${name}_bucket{${want},le=`) || l.startsWith(`${name}_sum{${want}} `) ||
    l.startsWith(`${name}_count{${want}} `)
  ).map((l) => l.replace(`{${want},`, "{").replace(`{${want}}`, ""));
  const family = `# HELP ${name} x\n# TYPE ${name} histogram\n${lines.join("\n")}\n`;
  const [parsed] = parsePrometheus(family) as Parsed[];
  return parsed.metrics[0];
}

function value(f: Parsed | undefined, labels: Record<string, string> = {}): number {
  const m = f?.metrics.find((m) => JSON.stringify(m.labels ?? {}) === JSON.stringify(labels));
  assert.ok(m, `No series ${JSON.stringify(labels)} in ${f?.name}`);
  return Number(m.value);
}

Deno.test("Registry renders counters, gauges and histograms that a Prometheus parser reads back", async () => {
  const registry = new Registry();
  const c = registry.counter({
    name: "requests_total",
    help: 'Requests with a \\ backslash and a\nnewline and "quotes"',
    labelNames: ["path"],
  });
  const tricky = 'a"b\\c\nd';
  c.inc({ path: tricky });
  c.inc({ path: tricky }, 2);
  c.inc({ path: "/x" });
  registry.gauge({ name: "temperature", help: "Now" }).set(undefined, -1.5);
  const h = registry.histogram({
    name: "latency_seconds",
    help: "Latency",
    labelNames: ["op"],
    buckets: [0.1, 1, 10],
  });
  for (const v of [0.05, 0.1, 0.5, 5, 50]) h.observe({ op: "get" }, v);

  const parsed = await scrape(registry);
  const requests = parsed.get("requests_total")!;
  assert.equal(requests.type, "COUNTER");
  assert.equal(requests.help, 'Requests with a \\ backslash and a\nnewline and "quotes"');
  assert.equal(value(requests, { path: tricky }), 3);
  assert.equal(value(requests, { path: "/x" }), 1);
  assert.equal(parsed.get("temperature")?.type, "GAUGE");
  assert.equal(value(parsed.get("temperature")), -1.5);
  assert.equal(parsed.get("latency_seconds")?.type, "HISTOGRAM");
  const text = await registry.metrics();
  const latency = histogram(text, "latency_seconds", { op: "get" });
  assert.deepEqual(latency.buckets, { "0.1": "2", "1": "3", "10": "4", "+Inf": "5" });
  assert.equal(latency.count, "5");
  assert.equal(Number(latency.sum), 55.65);
  assert.deepEqual(h.get({ op: "get" }), { count: 5, sum: 55.65 });
  // Families come out sorted by name, each with HELP then TYPE.
  assert.deepEqual([...parsed.keys()], ["latency_seconds", "requests_total", "temperature"]);
  assert.match(text, /^# HELP latency_seconds Latency\n# TYPE latency_seconds histogram\n/);
  assert.ok(
    text.includes(
      '# HELP requests_total Requests with a \\\\ backslash and a\\nnewline and "quotes"\n',
    ),
  );
  assert.ok(text.includes('requests_total{path="a\\"b\\\\c\\nd"} 3\n'));
});

Deno.test("Registry rejects bad names, labels, values and conflicting redefinitions", () => {
  const registry = new Registry();
  assert.throws(() => registry.counter({ name: "1bad", help: "" }), TypeError);
  assert.throws(() => registry.counter({ name: "ok", help: "", labelNames: ["__x"] }), TypeError);
  assert.throws(() => registry.histogram({ name: "h", help: "", labelNames: ["le"] }), TypeError);
  assert.throws(() => registry.histogram({ name: "h2", help: "", buckets: [1, 1] }), TypeError);
  const c = registry.counter({ name: "c_total", help: "", labelNames: ["a"] });
  assert.equal(registry.counter({ name: "c_total", help: "", labelNames: ["a"] }), c);
  assert.throws(
    () => registry.gauge({ name: "c_total", help: "" }),
    /already defined as a counter/,
  );
  assert.throws(() => c.inc({ a: "x" }, -1), RangeError);
  assert.throws(() => c.inc({ b: "x" } as never), /unknown label "b"/);
  c.inc({ a: "x" });
  assert.ok(c.remove({ a: "x" }));
  assert.equal(c.get({ a: "x" }), 0);
});

Deno.test("formatValue() writes numbers as Go's FormatFloat(v, 'g', -1, 64)", () => {
  const cases: [number, string][] = [
    [0, "0"],
    [1, "1"],
    [0.005, "0.005"],
    [0.0001, "0.0001"],
    [1e-5, "1e-05"],
    [1e-8, "1e-08"],
    [123456, "123456"],
    [1234567, "1.234567e+06"],
    [1e6, "1e+06"],
    [1.7e9, "1.7e+09"],
    [-2.5, "-2.5"],
    [Infinity, "+Inf"],
    [-Infinity, "-Inf"],
    [NaN, "NaN"],
  ];
  for (const [v, s] of cases) assert.equal(formatValue(v), s, `for ${v}`);
});

Deno.test("controller-runtime metrics: names, labels, buckets and values from real hooks", async () => {
  const registry = new Registry();
  const m = controllerMetrics(registry, "myapp");
  m.maxConcurrentReconciles(2);
  m.activeWorkers(1);
  m.reconciled("success", 0.02);
  m.reconciled("success", 0.3);
  m.reconciled("requeue_after", 0.001);
  m.reconciled("error", 1.1);
  m.reconciled("error", 0.5, true);
  m.timedOut();
  m.activeWorkers(-1);
  const clock = new FakeClock(0);
  const queue = new WorkQueue<string>({
    name: "myapp",
    clock,
    metrics: workqueueMetrics(registry, "myapp"),
  });
  queue.add("a");
  queue.add("b");
  queue.add("a");
  const item = await queue.get();
  clock.tick(250);
  queue.done(item.key!);
  queue.addAfter("c", 100);
  restClientMetrics(registry)({
    method: "GET",
    verb: "get",
    host: "h:6443",
    code: 404,
    durationMs: 1,
  });
  restClientMetrics(registry)({
    method: "PUT",
    verb: "update",
    host: "h:6443",
    code: 0,
    durationMs: 1,
  });
  leaderElectionMetrics(registry, "myapp-operator").leading(true);

  const p = await scrape(registry);
  const text = await registry.metrics();
  const c = { controller: "myapp" };
  const total = p.get("controller_runtime_reconcile_total")!;
  assert.equal(value(total, { ...c, result: "success" }), 2);
  assert.equal(value(total, { ...c, result: "error" }), 2);
  assert.equal(value(total, { ...c, result: "requeue" }), 0);
  assert.equal(value(total, { ...c, result: "requeue_after" }), 1);
  assert.equal(value(p.get("controller_runtime_reconcile_errors_total"), c), 2);
  assert.equal(value(p.get("controller_runtime_terminal_reconcile_errors_total"), c), 1);
  assert.equal(value(p.get("controller_runtime_reconcile_timeouts_total"), c), 1);
  assert.equal(value(p.get("controller_runtime_max_concurrent_reconciles"), c), 2);
  assert.equal(value(p.get("controller_runtime_active_workers"), c), 0);
  assert.equal(p.get("controller_runtime_reconcile_time_seconds")?.type, "HISTOGRAM");
  const time = histogram(text, "controller_runtime_reconcile_time_seconds", c);
  assert.equal(time.count, "5");
  assert.equal(Object.keys(time.buckets!).length, 41);
  assert.equal(time.buckets!["0.005"], "1");
  assert.equal(time.buckets!["0.35"], "3");

  const q = { name: "myapp", controller: "myapp" };
  assert.equal(value(p.get("workqueue_depth"), { ...q, priority: "0" }), 1);
  assert.equal(value(p.get("workqueue_adds_total"), q), 2);
  assert.equal(value(p.get("workqueue_retries_total"), q), 1);
  const work = histogram(text, "workqueue_work_duration_seconds", q);
  // (Integer-like keys come first in a JS object, so compare as sets.)
  assert.deepEqual(
    new Set(Object.keys(work.buckets!)),
    new Set([
      "1e-08",
      "1e-07",
      "1e-06",
      "9.999999999999999e-06",
      "9.999999999999999e-05",
      "0.001",
      "0.01",
      "0.1",
      "1",
      "10",
      "100",
      "1000",
      "+Inf",
    ]),
  );
  assert.equal(work.count, "1");
  assert.equal(Number(work.sum), 0.25);
  assert.equal(histogram(text, "workqueue_queue_duration_seconds", q).count, "1");
  assert.ok(p.has("workqueue_unfinished_work_seconds"));
  assert.ok(p.has("workqueue_longest_running_processor_seconds"));

  const rest = p.get("rest_client_requests_total")!;
  assert.equal(value(rest, { code: "404", method: "GET", host: "h:6443" }), 1);
  assert.equal(value(rest, { code: "<error>", method: "PUT", host: "h:6443" }), 1);
  assert.equal(value(p.get("leader_election_master_status"), { name: "myapp-operator" }), 1);
  await queue.shutDownWithDrain();
});

Deno.test("process metrics are present and plausible", async () => {
  const registry = new Registry();
  registerProcessMetrics(registry);
  for (let i = 0; i < 1e6; i++) Math.sqrt(i); // some CPU time
  const p = await scrape(registry);
  assert.ok(value(p.get("process_resident_memory_bytes")) > 1e6);
  const start = value(p.get("process_start_time_seconds"));
  // Before this runtime's time origin (within the kernel's 10 ms clock tick), not before boot.
  assert.ok(start <= performance.timeOrigin / 1000 + 0.01, `start ${start}`);
  if (Deno.build.os === "linux") {
    const btime = Number(/^btime (\d+)$/m.exec(await Deno.readTextFile("/proc/stat"))![1]);
    assert.ok(start >= btime, `start ${start} is before boot ${btime}`);
    assert.equal(p.get("process_cpu_seconds_total")?.type, "COUNTER");
    assert.ok(value(p.get("process_cpu_seconds_total")) >= 0);
    assert.ok(value(p.get("process_open_fds")) >= 3);
    assert.ok(value(p.get("process_max_fds")) >= value(p.get("process_open_fds")));
    assert.ok(value(p.get("process_virtual_memory_bytes")) > 0);
  }
});

Deno.test("serveMetrics() serves /metrics on loopback and nothing for address 0", async () => {
  const registry = new Registry();
  registry.counter({ name: "hits_total", help: "Hits" }).inc();
  assert.equal(await serveMetrics(registry, { address: "0" }), undefined);
  assert.throws(
    () => serveMetrics(registry, { address: "8080" }),
    /Cannot parse bind address "8080"/,
  );
  await using server = await serveMetrics(registry, { address: "127.0.0.1:0" });
  assert.ok(server && server.port > 0);
  const res = await fetch(`${server.url}metrics`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), METRICS_CONTENT_TYPE);
  assert.equal(value((parsePrometheus(await res.text()) as Parsed[])[0]), 1);
  const missing = await fetch(`${server.url}other`);
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  const post = await fetch(`${server.url}metrics`, { method: "POST" });
  assert.equal(post.status, 405);
  await post.body?.cancel();
});
