// Sharded replicas on one workload (issue 18): the sharded test operator
// (tests/fixtures/shard_operator.ts) with 1, 2 and 3 replicas, each its own process, on one
// control plane and the same objects. For each replica count every object is changed first,
// then the replicas start together; measured are the converge wall time (from the spawn to the
// last object's status written, seen by one watch of the harness), and per replica: objects
// cached, objects received by its informers (kubeno_shard_received_total), RSS and its part
// above an idle replica's (the informer's memory, roughly), and CPU seconds.
//
// On a 2-core machine the replicas, kube-apiserver and etcd share two cores: per-replica
// memory and events scale down with the replica count, total throughput cannot go up here.
// Measured and reported, never asserted.
//
//   deno task bench:sharding [--objects 6000] [--rounds 1] [--smoke]
import { parseArgs } from "node:util";
import { createClient } from "../src/client/client.ts";
import { Namespace } from "../src/core/kinds.ts";
import { informer } from "../src/runtime/cache/informer.ts";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { Shardwork } from "../tests/fixtures/shard_operator.ts";
import { sampleProc } from "./_proc.ts";

const FIXTURE = new URL("../tests/fixtures/shard_operator.ts", import.meta.url).pathname;
const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    objects: { type: "string" },
    rounds: { type: "string" },
    smoke: { type: "boolean" },
  },
});
const N = Number(args.objects ?? (args.smoke ? 120 : 6000));
const ROUNDS = Number(args.rounds ?? 1);
const COUNTS = [1, 2, 3];
const NAMESPACES = 6;
const say = (l: string) => console.error(`bench:sharding: ${l}`);

interface Replica {
  proc: Deno.ChildProcess;
  metrics: string;
  probes: string;
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = l.addr.port;
  l.close();
  return port;
}

function spawn(kubeconfig: string, name: string): Replica {
  const metrics = freePort(), probes = freePort();
  const proc = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--quiet",
      FIXTURE,
      "run",
      "--kubeconfig",
      kubeconfig,
      "--namespace=default",
      "--log-level=warning",
      "--metrics-secure=false",
      `--metrics-bind-address=127.0.0.1:${metrics}`,
      `--health-probe-bind-address=127.0.0.1:${probes}`,
      "--shard-lease-duration=4s",
      "--shard-renew-deadline=3s",
      "--shard-retry-period=500ms",
    ],
    env: { NO_COLOR: "1", POD_NAME: name, SHARD_FIELD_MANAGER: `shard-${name}` },
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  return {
    proc,
    metrics: `http://127.0.0.1:${metrics}/metrics`,
    probes: `http://127.0.0.1:${probes}/readyz`,
  };
}

function sample(text: string, name: string, label = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(name) && line.includes(label) && !line.startsWith("#")) {
      const [series, value] = line.split(/ (?=[^ ]+$)/);
      if (series === name || series.startsWith(name + "{")) sum += Number(value);
    }
  }
  return sum;
}

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 600_000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stop(replicas: Replica[]): Promise<void> {
  for (const r of replicas) {
    try {
      r.proc.kill("SIGTERM");
    } catch { /* gone */ }
  }
  await Promise.all(replicas.map((r) => r.proc.status));
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b), m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

await using cp = await startControlPlane({ progress: say });
using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
const install = await new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", "--quiet", FIXTURE, "install", "--kubeconfig", cp.kubeconfigPath],
  stderr: "inherit",
}).output();
if (install.code !== 0) throw new Error("install failed");

// An idle replica (no objects yet): the baseline its informer memory is measured above.
const idle = spawn(cp.kubeconfigPath, "idle");
await until(
  async () => (await fetch(idle.probes).then((r) => r.text(), () => "")) === "ok",
  "idle ready",
);
await until(
  async () => sample(await (await fetch(idle.metrics)).text(), "kubeno_shard_owned") === 12,
  "idle owning 12 shards",
);
const baselineMiB = sampleProc(idle.proc.pid).rssKiB / 1024;
await stop([idle]);
say(`idle replica RSS ${baselineMiB.toFixed(1)} MiB`);

const namespaces = Array.from({ length: NAMESPACES }, (_, i) => `bench-${i}`);
for (const ns of namespaces) await admin.create(Namespace, { metadata: { name: ns } });
const names = Array.from(
  { length: N },
  (_, i) => ({ name: `w${i}`, namespace: namespaces[i % NAMESPACES] }),
);
async function each(fn: (o: { name: string; namespace: string }) => Promise<unknown>) {
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < names.length) await fn(names[next++]);
  }));
}
await each((o) => admin.create(Shardwork, { metadata: o, spec: { value: 0 } }));
say(`${N} Shardworks created`);

// One watch of the harness sees every status written.
const watched = informer(Shardwork, { client: admin }).start();
await watched.synced();
let target = 0;
const done = () => watched.list().filter((w) => w.status?.observed === target).length;

interface Row {
  replicas: number;
  wallS: number[];
  objects: number[];
  received: number[];
  rssMiB: number[];
  cpuS: number[];
}
const rows: Row[] = [];
let value = 0;
for (const k of COUNTS) {
  const row: Row = { replicas: k, wallS: [], objects: [], received: [], rssMiB: [], cpuS: [] };
  for (let round = 0; round < ROUNDS; round++) {
    target = ++value;
    await each((o) =>
      admin.patch(Shardwork, o.name, { spec: { value: target } }, { namespace: o.namespace })
    );
    await until(
      () => watched.list().every((w) => w.spec.value === target),
      "the harness to see every change",
    );
    const t0 = performance.now();
    const replicas = Array.from({ length: k }, (_, i) => spawn(cp.kubeconfigPath, `k${k}-r${i}`));
    await until(() => done() === N, `${N} objects converged with ${k} replicas`);
    const wall = (performance.now() - t0) / 1000;
    const texts = await Promise.all(
      replicas.map(async (r) => await (await fetch(r.metrics)).text()),
    );
    const procs = replicas.map((r) => sampleProc(r.proc.pid));
    row.wallS.push(wall);
    row.objects.push(...texts.map((t) => sample(t, "kubeno_shard_objects")));
    row.received.push(
      ...texts.map((t) => sample(t, "kubeno_shard_received_total", 'result="kept"')),
    );
    row.rssMiB.push(...procs.map((p) => p.rssKiB / 1024));
    row.cpuS.push(...procs.map((p) => p.cpuSeconds));
    say(
      `${k} replicas, round ${round + 1}: converged in ${wall.toFixed(2)} s; per replica objects ${
        texts.map((t) => sample(t, "kubeno_shard_objects")).join("/")
      }, RSS ${procs.map((p) => (p.rssKiB / 1024).toFixed(0)).join("/")} MiB`,
    );
    await stop(replicas);
  }
  rows.push(row);
}
await watched.stop();

const load = Deno.loadavg().map((l) => l.toFixed(2)).join(", ");
const out: string[] = [
  `### Sharded replicas (${N} objects, 12 shards by uid, median of ${ROUNDS} round(s))`,
  "",
  `Machine: ${navigator.hardwareConcurrency} cores, load average ${load} after the run; Kubernetes ${cp.version} with ShardedListAndWatch; idle replica RSS ${
    baselineMiB.toFixed(1)
  } MiB.`,
  "",
  "| replicas | converge wall (s) | objects cached per replica | objects received per replica | RSS per replica (MiB) | above idle (MiB) | KiB per cached object | CPU per replica (s) | CPU all replicas (s) |",
  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
];
for (const r of rows) {
  const objects = median(r.objects), rss = median(r.rssMiB), cpu = median(r.cpuS);
  const above = rss - baselineMiB;
  out.push(
    `| ${r.replicas} | ${median(r.wallS).toFixed(2)} | ${Math.round(objects)} | ${
      Math.round(median(r.received))
    } | ${rss.toFixed(1)} | ${above.toFixed(1)} | ${
      (above * 1024 / Math.max(1, objects)).toFixed(1)
    } | ${cpu.toFixed(2)} | ${(cpu * r.replicas).toFixed(2)} |`,
  );
}
console.log(out.join("\n"));
