// The operator in production shape: several real operator processes
// (tests/fixtures/widget_operator.ts) with leader election, probes, metrics and JSON logs
// against one real control plane (one per file).
//
// Who wrote what is read from the API server, not only from the processes: each process
// runs with its own field manager (WIDGET_FIELD_MANAGER=widget-a|b|c), so every write
// (server-side apply of the ConfigMap, finalizer and status patches of the Widget) leaves
// that manager and a server-side timestamp in the object's managedFields. The processes'
// JSON logs add one "Reconciled" line per reconcile that wrote, with its time.
//
// Timings are measured and printed, never asserted; waits have generous deadlines for a
// loaded 2-core machine.
import assert from "node:assert/strict";
// A test-only dependency, pinned here rather than in deno.json.
// deno-lint-ignore no-import-prefix
import parsePrometheus from "npm:parse-prometheus-text-format@1.1.1";
import { startControlPlane, startFaultProxy } from "../testing.ts";
import { createClient } from "../src/client/client.ts";
import { ConfigMap, Namespace } from "../src/core/kinds.ts";
import { Widget } from "./fixtures/widget_operator.ts";
import { jsonLines, runArgv, uniqueName, waitFor } from "./_helpers.ts";
import { freePort } from "../src/testing/process.ts";

const FIXTURE = new URL("./fixtures/widget_operator.ts", import.meta.url).pathname;
const LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/widget-operator";
const DELAY = "widgets.kubeno.dev/reconcile-delay-ms";
const FAST_ELECTION = [
  "--leader-elect",
  "--leader-elect-namespace=default",
  "--leader-elect-lease-duration=3s",
  "--leader-elect-renew-deadline=2s",
  "--leader-elect-retry-period=500ms",
];
const LEASE_MS = 3_000;
const RETRY_MS = 500;

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

interface LogLine {
  raw: string;
  json?: Json;
  /** The line's own `ts`, else when the test read it. */
  at: number;
}

/** A running operator process whose stderr (JSON log lines) is collected as it comes. */
class OperatorProcess implements AsyncDisposable {
  readonly lines: LogLine[] = [];
  readonly metricsUrl: string;
  readonly probesUrl: string;
  readonly status: Promise<Deno.CommandStatus>;
  readonly #proc: Deno.ChildProcess;
  readonly #read: Promise<void>;

  constructor(readonly name: string, kubeconfig: string, args: string[]) {
    const metricsPort = freePort();
    const probesPort = freePort();
    this.metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    this.probesUrl = `http://127.0.0.1:${probesPort}/`;
    this.#proc = new Deno.Command(Deno.execPath(), {
      args: runArgv(FIXTURE, [
        "--kubeconfig",
        kubeconfig,
        "--metrics-secure=false",
        `--metrics-bind-address=127.0.0.1:${metricsPort}`,
        `--health-probe-bind-address=127.0.0.1:${probesPort}`,
        ...args,
      ]),
      env: {
        NO_COLOR: "1",
        KUBECONFIG: "/nonexistent",
        POD_NAMESPACE: "",
        WATCH_NAMESPACE: "",
        WIDGET_FIELD_MANAGER: `widget-${name}`,
      },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.#read = this.#collect();
    // Exited and its last lines read: a test that checks the log after the exit sees them all.
    this.status = this.#proc.status.then(async (s) => {
      await this.#read.catch(() => {});
      return s;
    });
  }

  async #collect(): Promise<void> {
    for await (const { raw, json } of jsonLines<Json>(this.#proc.stderr)) {
      const ts = json?.ts ? Date.parse(json.ts) : NaN;
      this.lines.push({ raw, json, at: Number.isNaN(ts) ? Date.now() : ts });
    }
  }

  /** Lines whose message starts with `prefix`. */
  logged(prefix: string): LogLine[] {
    return this.lines.filter((l) =>
      typeof l.json?.msg === "string" && l.json.msg.startsWith(prefix)
    );
  }

  /** Reconciles that wrote (the fixture's "Reconciled" lines). */
  get reconciled(): LogLine[] {
    return this.logged("Reconciled ");
  }

  /** The leader-election identity, from its first log line about the Lease. */
  get identity(): string | undefined {
    return this.logged("Attempting to acquire lease")[0]?.json?.identity;
  }

  /** When it acquired the Lease, by its own log. */
  get acquiredAt(): number | undefined {
    return this.logged("Acquired lease")[0]?.at;
  }

  waitLogged(prefix: string, timeoutMs = 30_000): Promise<LogLine> {
    return until(
      () => this.logged(prefix)[0],
      `operator ${this.name} to log "${prefix}"`,
      () => this.tail(),
      timeoutMs,
    );
  }

  async probe(path: string): Promise<{ status: number; body: string }> {
    const res = await fetch(this.probesUrl + path);
    return { status: res.status, body: await res.text() };
  }

  async metrics(): Promise<Family[]> {
    return parsePrometheus(await (await fetch(this.metricsUrl)).text()) as Family[];
  }

  kill(signal: Deno.Signal): void {
    try {
      this.#proc.kill(signal);
    } catch { /* already exited */ }
  }

  tail(n = 15): string {
    return this.lines.slice(-n).map((l) => `  [${this.name}] ${l.raw}`).join("\n");
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.kill("SIGKILL");
    await this.status;
    await this.#read;
  }
}

interface Family {
  name: string;
  metrics: { value: string; labels?: Record<string, string> }[];
}

function sample(families: Family[], name: string, labels: Record<string, string> = {}): number {
  const fam = families.find((f) => f.name === name);
  return (fam?.metrics ?? [])
    .filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    .reduce((sum, m) => sum + Number(m.value), 0);
}

/** `waitFor`, naming what it waited for with `detail()` as it is when the deadline passes. */
async function until<T>(
  cond: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string,
  detail: () => string = () => "",
  timeoutMs = 30_000,
): Promise<T> {
  try {
    return await waitFor(cond, { what, timeoutMs });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${detail()}`);
  }
}

function ms(n: number): string {
  return `${Math.round(n)} ms`;
}

Deno.test("leader election, probes, metrics and logs of real operator processes", async (t) => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
  const kc = cp.kubeconfigPath;
  const procs: OperatorProcess[] = [];
  const start = (name: string, args: string[], kubeconfig = kc) => {
    const p = new OperatorProcess(name, kubeconfig, args);
    procs.push(p);
    return p;
  };
  const report: string[] = [];
  const measured = (line: string) => {
    report.push(line);
    console.log(line);
  };

  /** Creates Widgets in a fresh namespace. */
  const widgets = async (prefix: string, n: number, annotations?: Record<string, string>) => {
    const ns = uniqueName(prefix);
    await admin.create(Namespace, { metadata: { name: ns } });
    const names = Array.from({ length: n }, (_, i) => `w${i}`);
    for (const name of names) {
      await admin.create(Widget, {
        metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
        spec: { size: 2, color: "red" },
      });
    }
    return { ns, names };
  };
  /** Every Widget Ready and its ConfigMap written, read from the API server. */
  const converged = async (ns: string, names: string[]) => {
    for (const name of names) {
      const w = await cp.request(
        "GET",
        `/apis/widgets.kubeno.dev/v1/namespaces/${ns}/widgets/${name}`,
      );
      if (w.body.status?.phase !== "Ready") return false;
      const cm = await cp.request("GET", `/api/v1/namespaces/${ns}/configmaps/${name}-config`);
      if (cm.status !== 200) return false;
    }
    return true;
  };
  /** The field managers of kubeno writes on the Widgets and ConfigMaps of `ns`. */
  const writers = async (ns: string) => {
    const out: { manager: string; time: number; object: string }[] = [];
    for (
      const path of [
        `/apis/widgets.kubeno.dev/v1/namespaces/${ns}/widgets`,
        `/api/v1/namespaces/${ns}/configmaps`,
      ]
    ) {
      const list = await cp.request("GET", path);
      for (const obj of list.body.items) {
        for (const mf of obj.metadata.managedFields ?? []) {
          if (!String(mf.manager).startsWith("widget-")) continue;
          out.push({
            manager: mf.manager,
            time: Date.parse(mf.time),
            object: `${path.split("/").pop()}/${ns}/${obj.metadata.name}`,
          });
        }
      }
    }
    return out;
  };
  const holder = async () => (await cp.request("GET", LEASE)).body?.spec?.holderIdentity;

  try {
    let a!: OperatorProcess;
    await t.step(
      "/readyz fails until the caches sync (RBAC not yet granted), then passes",
      async () => {
        const install = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", "--quiet", FIXTURE, "install", "--kubeconfig", kc],
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.equal(install.code, 0, new TextDecoder().decode(install.stderr));
        // Operator a runs as a user that may use Widgets, Leases and Events but not yet
        // list ConfigMaps: its ConfigMap informer cannot sync until that is granted.
        await cp.kubectl(
          "create",
          "clusterrole",
          "widgets-only",
          "--verb=*",
          "--resource=widgets.widgets.kubeno.dev,widgets.widgets.kubeno.dev/status,leases.coordination.k8s.io,events",
        ).then((r) => assert.equal(r.code, 0, r.stderr));
        await cp.kubectl(
          "create",
          "clusterrolebinding",
          "op-a-widgets",
          "--clusterrole=widgets-only",
          "--user=op-a",
        ).then((r) => assert.equal(r.code, 0, r.stderr));
        a = start("a", FAST_ELECTION, await cp.createUser("op-a"));
        await a.waitLogged("Serving probes");
        await a.waitLogged("Controller widget cannot sync its caches yet");
        const before = await a.probe("readyz?verbose");
        assert.equal(before.status, 500);
        assert.equal(
          before.body,
          "[-]informers failed: reason withheld\n[+]optional-kinds ok\nhealthz check failed\n",
        );
        assert.match(
          (await a.probe("readyz/informers")).body,
          /Informers not synced: "ConfigMap"/,
        );
        assert.equal((await a.probe("healthz")).status, 200, "alive while syncing");

        await cp.kubectl(
          "create",
          "clusterrolebinding",
          "op-a-admin",
          "--clusterrole=cluster-admin",
          "--user=op-a",
        ).then((r) => assert.equal(r.code, 0, r.stderr));
        const grantedAt = Date.now();
        await until(
          async () => (await a.probe("readyz")).status === 200,
          `/readyz of a to pass`,
          () => a.tail(),
          45_000,
        );
        measured(`readyz: ready ${ms(Date.now() - grantedAt)} after RBAC was granted`);
        assert.deepEqual(await a.probe("healthz?verbose"), {
          status: 200,
          body: "[+]ping ok\n[+]watches ok\n[+]leader-election ok\nhealthz check passed\n",
        });
        await waitFor(async () => (await holder()) === a.identity, { what: "a to hold the Lease" });
      },
    );

    let b!: OperatorProcess;
    let killedA = 0;
    await t.step(
      "two processes: exactly one reconciles; /metrics counts its reconciles",
      async () => {
        b = start("b", FAST_ELECTION);
        await until(
          async () => (await b.probe("readyz").catch(() => ({ status: 0 }))).status === 200,
          `the standby b to be ready (warm caches)`,
          () => b.tail(),
        );
        assert.equal(b.acquiredAt, undefined, "b must not lead while a does");

        // Scrape a's /metrics throughout the workload; every scrape must parse.
        let scrapes = 0;
        const scraping = new AbortController();
        const scraper = (async () => {
          while (!scraping.signal.aborted) {
            const fams = await a.metrics();
            assert.ok(fams.some((f) => f.name === "workqueue_adds_total"));
            scrapes++;
            await new Promise((r) => setTimeout(r, 50));
          }
        })();
        const { ns, names } = await widgets("ha", 12);
        await until(() => converged(ns, names), `12 widgets converged`, () => a.tail());
        scraping.abort();
        await scraper;

        const managers = new Set((await writers(ns)).map((w) => w.manager));
        assert.deepEqual([...managers], ["widget-a"], "only the leader writes");
        assert.equal(b.reconciled.length, 0, "the standby reconciled nothing");
        assert.equal(await holder(), a.identity);

        // Counters against the reconciles a's log shows: every reconcile that wrote logs
        // "Reconciled" before the controller counts it, every failed one logs a warning.
        let fams: Family[] = [];
        await waitFor(async () => {
          fams = await a.metrics();
          const total = sample(fams, "controller_runtime_reconcile_total", {
            controller: "widget",
          });
          return total === a.reconciled.length + a.logged("Reconcile of ").length;
        }, { what: "reconcile_total to match the reconciles logged" });
        const success = sample(fams, "controller_runtime_reconcile_total", {
          controller: "widget",
          result: "success",
        });
        assert.equal(success, a.reconciled.length);
        assert.equal(
          sample(fams, "controller_runtime_reconcile_errors_total", { controller: "widget" }),
          a.logged("Reconcile of ").length,
        );
        assert.ok(success >= names.length, `${success} successful reconciles for ${names.length}`);
        assert.equal(sample(fams, "leader_election_master_status", { name: "widget-operator" }), 1);
        assert.equal(sample(await b.metrics(), "leader_election_master_status"), 0);
        assert.equal(
          sample(await b.metrics(), "controller_runtime_reconcile_total", { controller: "widget" }),
          0,
        );
        measured(
          `metrics: ${scrapes} scrapes parsed during the workload; reconcile_total{result="success"}=${success} = ${a.reconciled.length} "Reconciled" log lines, errors=${
            a.logged("Reconcile of ").length
          }`,
        );
      },
    );

    await t.step(
      "kill -9 of the leader: the standby takes over and converges pending work",
      async () => {
        a.kill("SIGKILL");
        killedA = Date.now();
        assert.notEqual((await a.status).code, 0);
        // Work created while no replica leads.
        const { ns, names } = await widgets("orphan", 5);
        const acquired = await b.waitLogged("Acquired lease", 60_000);
        await until(() => converged(ns, names), `work converged by b`, () => b.tail());
        const convergedAt = Date.now();
        measured(
          `kill -9: b took over ${
            ms(acquired.at - killedA)
          } after the kill (lease ${LEASE_MS} ms + retry ${RETRY_MS} ms), pending work converged after ${
            ms(convergedAt - killedA)
          }`,
        );
        assert.equal(await holder(), b.identity);
        assert.deepEqual(
          [...new Set((await writers(ns)).map((w) => w.manager))],
          ["widget-b"],
          "the pending work was written by the new leader only",
        );
      },
    );

    let c!: OperatorProcess;
    await t.step(
      "a graceful stop drains, then releases the Lease: the standby takes over at once",
      async () => {
        c = start("c", FAST_ELECTION);
        await until(
          async () => (await c.probe("readyz").catch(() => ({ status: 0 }))).status === 200,
          `the standby c to be ready`,
          () => c.tail(),
        );
        // A reconcile in flight when the stop comes: b must finish it before handing over.
        const { ns, names } = await widgets("drain", 1, { [DELAY]: "1500" });
        await until(
          () => b.lines.some((l) => l.json?.msg?.startsWith("Waiting ") && l.json.namespace === ns),
          `b to start the slow reconcile`,
          () => b.tail(),
        );
        const stoppedAt = Date.now();
        b.kill("SIGTERM");
        const acquired = await c.waitLogged("Acquired lease", 30_000);
        const status = await b.status;
        assert.equal(status.code, 0, b.tail());
        const released = b.logged("Released lease")[0];
        assert.ok(released, `b released the Lease\n${b.tail()}`);
        const slowDone = b.reconciled.find((l) => l.json?.namespace === ns);
        assert.ok(slowDone, "b finished its in-flight reconcile before exiting");
        assert.ok(slowDone.at <= released.at, "drained before releasing");
        assert.ok(acquired.at >= released.at, "c acquired only after b released");
        measured(
          `graceful stop: c took over ${
            ms(acquired.at - released.at)
          } after b released the Lease (retry period ${RETRY_MS} ms), ${
            ms(acquired.at - stoppedAt)
          } after SIGTERM including ${ms(released.at - stoppedAt)} of draining a slow reconcile`,
        );
        await waitFor(() => converged(ns, names), { what: "the slow widget converged" });
        assert.deepEqual(
          [
            ...new Set(
              (await writers(ns)).filter((w) => w.manager !== "widget-c").map((w) => w.manager),
            ),
          ],
          ["widget-b"],
        );
      },
    );

    await t.step("at no time do two replicas write", async () => {
      // Leadership windows from the processes' logs and the test's own kill time.
      const windows = [
        { p: a, from: a.acquiredAt!, to: killedA },
        { p: b, from: b.acquiredAt!, to: b.logged("Released lease")[0].at },
        { p: c, from: c.acquiredAt!, to: Infinity },
      ];
      for (let i = 1; i < windows.length; i++) {
        assert.ok(
          windows[i].from >= windows[i - 1].to,
          `${windows[i].p.name} led while ${windows[i - 1].p.name} did`,
        );
      }
      // Every write the processes logged lies in their own window.
      for (const { p, from, to } of windows) {
        for (const line of p.reconciled) {
          assert.ok(
            line.at >= from && line.at <= to,
            `${p.name} wrote outside its leadership: ${line.raw}`,
          );
        }
      }
      // Every write the API server recorded (managedFields times have 1 s resolution).
      const all = [];
      const nss = await cp.request("GET", "/api/v1/namespaces");
      for (const ns of nss.body.items.map((n: Json) => n.metadata.name)) {
        all.push(...await writers(ns));
      }
      assert.ok(all.length > 0);
      // An apply that changes only managedFields (a new leader re-applying the same
      // content) records no time; the logged reconciles above cover those writes.
      const timed = all.filter((w) => Number.isFinite(w.time));
      for (const w of timed) {
        const win = windows.find((x) => `widget-${x.p.name}` === w.manager)!;
        const inside = w.time >= Math.floor(win.from / 1000) * 1000 &&
          w.time <= Math.ceil(win.to / 1000) * 1000;
        assert.ok(inside, `${w.manager} wrote ${w.object} outside its leadership`);
      }
      measured(
        `audit: ${timed.length} timed managedFields entries (of ${all.length}) and ${
          windows.reduce((n, w) => n + w.p.reconciled.length, 0)
        } logged reconciles checked against the leadership windows`,
      );
    });

    await t.step("log lines are JSON with controller, namespace, name and reconcileID", () => {
      const ids = new Set<string>();
      for (const p of [a, b, c]) {
        for (const line of p.lines) assert.ok(line.json, `not JSON from ${p.name}: ${line.raw}`);
        assert.ok(p.reconciled.length > 0 || p === c, `${p.name} logged no reconcile`);
        for (const line of [...p.reconciled, ...p.logged("Waiting ")]) {
          const j = line.json!;
          assert.equal(j.controller, "widget");
          assert.equal(j.logger, "kubeno.controller.widget");
          assert.match(j.namespace, /^(ha|orphan|drain)-/);
          assert.match(j.name, /^w\d+$/);
          assert.match(j.reconcileID, /^[0-9a-f-]{36}$/);
          assert.equal(j.key, `${j.namespace}/${j.name}`);
          if (line.json!.msg.startsWith("Reconciled")) {
            assert.ok(!ids.has(j.reconcileID), "reconcile IDs are unique");
            ids.add(j.reconcileID);
          }
        }
        const text = p.lines.map((l) => l.raw).join("\n");
        assert.ok(!/PRIVATE KEY|BEGIN CERTIFICATE/.test(text), `${p.name} logged key material`);
      }
    });

    await t.step("losing the Lease exits 1 at once", async () => {
      // Another holder takes the Lease (retrying when c's renewal races the update).
      await waitFor(async () => {
        const lease = (await cp.request("GET", LEASE)).body;
        assert.equal(lease.spec.holderIdentity, c.identity);
        const now = new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
        const spec = {
          ...lease.spec,
          holderIdentity: "intruder",
          leaseDurationSeconds: 60,
          renewTime: now,
        };
        return (await cp.request("PUT", LEASE, { ...lease, spec })).status === 200;
      }, { what: "the Lease to be taken" });
      const takenAt = Date.now();
      const status = await c.status;
      measured(`lost Lease: c exited ${ms(Date.now() - takenAt)} after another holder took it`);
      assert.equal(status.code, 1);
      assert.ok(
        c.lines.some((l) => /Lost the Lease "default\/widget-operator"; exiting/.test(l.raw)),
        c.tail(),
      );
    });

    await t.step("/healthz fails while a watch is stalled and recovers after", async () => {
      await using proxy = await startFaultProxy({ target: cp.server });
      const viaProxy = await cp.writeKubeconfig({ server: proxy.url });
      const d = start("d", ["--watch-stall-timeout=2s"], viaProxy);
      await until(
        async () => (await d.probe("readyz").catch(() => ({ status: 0 }))).status === 200,
        `d to be ready`,
        () => d.tail(),
      );
      // A steady trickle of changes to both watched kinds, as a busy cluster has.
      const ns = uniqueName("stall");
      await admin.create(Namespace, { metadata: { name: ns } });
      const stop = new AbortController();
      const writer = (async () => {
        for (let i = 0; !stop.signal.aborted; i++) {
          await admin.create(ConfigMap, { metadata: { name: `cm-${i}`, namespace: ns } });
          await admin.create(Widget, {
            metadata: { name: `w${i}`, namespace: ns },
            spec: { size: 1, color: "blue" },
          });
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      try {
        await waitFor(async () => (await d.probe("healthz")).status === 200, {
          what: "/healthz to pass while events flow",
        });
        assert.ok(proxy.stall(true) >= 1, "no connection to stall");
        const stalledAt = Date.now();
        await waitFor(async () => (await d.probe("healthz")).status === 500, {
          what: "/healthz to fail",
        });
        measured(
          `stalled watch: /healthz failed ${
            ms(Date.now() - stalledAt)
          } after the stall (threshold 2000 ms)`,
        );
        assert.match((await d.probe("healthz?verbose")).body, /\[-\]watches failed/);
        assert.match(
          (await d.probe("healthz/watches")).body,
          /Watch stalled: "(Widget|ConfigMap)" silent for \d+ ms/,
        );
        proxy.stall(false);
        await waitFor(async () => (await d.probe("healthz")).status === 200, {
          what: "/healthz to recover",
        });
      } finally {
        stop.abort();
        await writer;
      }
      d.kill("SIGTERM");
      assert.equal((await d.status).code, 0, d.tail());
    });

    await t.step("a second signal while draining exits 1 without waiting", async () => {
      const e = start("e", []);
      await until(
        async () => (await e.probe("readyz").catch(() => ({ status: 0 }))).status === 200,
        `e to be ready`,
        () => e.tail(),
      );
      const { ns } = await widgets("second", 1, { [DELAY]: "600000" });
      await until(
        () => e.lines.some((l) => l.json?.msg?.startsWith("Waiting ") && l.json.namespace === ns),
        `e to start the slow reconcile`,
        () => e.tail(),
      );
      e.kill("SIGTERM");
      await e.waitLogged("Received a termination signal", 10_000);
      // One within a second of the first is its echo (`deno task` forwards Ctrl-C): wait it out.
      await new Promise((r) => setTimeout(r, 1_200));
      e.kill("SIGTERM");
      let timer: ReturnType<typeof setTimeout> | undefined;
      const status = await Promise.race([
        e.status,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`e still runs\n${e.tail()}`)), 30_000);
        }),
      ]).finally(() => clearTimeout(timer));
      assert.equal(status.code, 1, e.tail());
      assert.ok(
        e.lines.some((l) => /Second signal received; exiting without waiting/.test(l.raw)),
        e.tail(),
      );
      assert.ok(!e.reconciled.some((l) => l.json?.namespace === ns), "it waited for the reconcile");
    });
  } finally {
    for (const p of procs) await p[Symbol.asyncDispose]();
    if (report.length) console.log(`\nMeasured:\n  ${report.join("\n  ")}`);
  }
});
