// Results of a benchmark run: medians, ratios, the machine, and the Markdown table that
// BENCHMARKS.md carries between its `results` markers.
import { renderScale } from "./_scale.ts";

/** Everything a run measured, as written to bench/results.json. */
export interface Results {
  generatedAt: string;
  command: string;
  mode: "full" | "quick" | "smoke";
  machine: Record<string, string | number>;
  versions: Record<string, string>;
  params: Record<string, number>;
  // deno-lint-ignore no-explicit-any
  scenarios: Record<string, any>;
}

/**
 * The median of some numbers (the mean of the middle two for an even count).
 *
 * @param xs The numbers.
 * @returns The median, `NaN` when empty.
 */
export function median(xs: number[]): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * Medians of each numeric field over runs.
 *
 * @param runs Runs with the same numeric fields.
 * @returns Field → median.
 */
export function medians(runs: Record<string, unknown>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of Object.keys(runs[0] ?? {})) {
    if (typeof runs[0][key] === "number") out[key] = median(runs.map((r) => r[key] as number));
  }
  return out;
}

/**
 * The machine the run is on: cores, memory, CPU model and load.
 *
 * @returns The facts, read from /proc.
 */
export function machine(): Record<string, string | number> {
  const cpuinfo = Deno.readTextFileSync("/proc/cpuinfo");
  const meminfo = Deno.readTextFileSync("/proc/meminfo");
  const memKiB = Number(meminfo.match(/^MemTotal:\s+(\d+)/m)?.[1]);
  return {
    nproc: navigator.hardwareConcurrency,
    memoryGiB: Math.round(memKiB / 1024 / 1024 * 10) / 10,
    cpu: cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? "unknown",
    os: `${Deno.build.os} ${Deno.osRelease()}`,
  };
}

/**
 * The 1-minute load average now.
 *
 * @returns The load average.
 */
export function loadAverage(): number {
  return Number(Deno.readTextFileSync("/proc/loadavg").split(" ")[0]);
}

const fmt = (x: number | undefined, digits = 0) =>
  x === undefined || Number.isNaN(x) ? "—" : x.toLocaleString("en", {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !b || Number.isNaN(a) || Number.isNaN(b) || a / b < 0
    ? "—"
    : a / b < 0.1
    ? `${(a / b).toPrecision(2)}×`
    : `${(a / b).toFixed(2)}×`;

/**
 * Renders the results as Markdown: machine and versions, then one table per scenario.
 *
 * @param r The results.
 * @returns Markdown text.
 */
export function renderMarkdown(r: Results): string {
  const m = r.machine;
  const v = r.versions;
  const s = r.scenarios;
  const lines: string[] = [];
  lines.push(
    `Measured ${r.generatedAt} (${r.mode} run) with \`${r.command}\` (each scenario's own ` +
      "time, command and load average are in bench/results.json).",
    "",
    `Machine: ${m.nproc} cores (${m.cpu}), ${m.memoryGiB} GiB memory, ${m.os}; 1-minute load ` +
      `average ${m.loadBefore} before and ${m.loadAfter} after the run. Versions: Deno ${v.deno}, ` +
      `Go ${v.go}, Kubernetes ${v.kubernetes}, controller-runtime ${v["controller-runtime"]}, ` +
      `client-go ${v["client-go"]}, @kubernetes/client-node ${
        v["client-node"]
      }, Node.js ${v.node}, kube-rs ${v.kube ?? "?"} (k8s-openapi ${
        v["k8s-openapi"] ?? "?"
      }, Rust ${v.rust ?? "?"}). ` +
      `Medians of ${r.params.reps} run(s) per contender; a fresh control plane for every run.`,
    "",
  );
  if (s.converge) {
    const c = s.converge.median;
    const k = c.kubeno, g = c["controller-runtime"], l = c.limit;
    lines.push(
      `### Converge (N = ${fmt(s.converge.n)} Bench objects, 4 workers)`,
      "",
      "| contender | wall time (ms) | CPU (s) | CPU at converge (s) | peak RSS (MiB) | API writes |",
      "|---|---:|---:|---:|---:|---:|",
    );
    for (const [name, x] of Object.entries(c) as [string, Record<string, number>][]) {
      lines.push(
        `| ${name} | ${fmt(x?.wallMs)} | ${fmt(x?.cpuSec, 2)} | ${fmt(x?.cpuAtConvergeSec, 2)} | ${
          fmt(x?.peakRssMiB, 1)
        } | ${fmt(x?.writesTotal)} |`,
      );
    }
    lines.push(
      `| **kubeno / controller-runtime** | ${ratio(k?.wallMs, g?.wallMs)} | ${
        ratio(k?.cpuSec, g?.cpuSec)
      } | ${ratio(k?.cpuAtConvergeSec, g?.cpuAtConvergeSec)} | ${
        ratio(k?.peakRssMiB, g?.peakRssMiB)
      } | ${ratio(k?.writesTotal, g?.writesTotal)} |`,
      ...(c["kube-rs"]
        ? [
          `| **kubeno / kube-rs** | ${ratio(k?.wallMs, c["kube-rs"].wallMs)} | ${
            ratio(k?.cpuSec, c["kube-rs"].cpuSec)
          } | ${ratio(k?.cpuAtConvergeSec, c["kube-rs"].cpuAtConvergeSec)} | ${
            ratio(k?.peakRssMiB, c["kube-rs"].peakRssMiB)
          } | ${ratio(k?.writesTotal, c["kube-rs"].writesTotal)} |`,
        ]
        : []),
      `| **kubeno / limit** | ${ratio(k?.wallMs, l?.wallMs)} | ${ratio(k?.cpuSec, l?.cpuSec)} | ${
        ratio(k?.cpuAtConvergeSec, l?.cpuAtConvergeSec)
      } | ${ratio(k?.peakRssMiB, l?.peakRssMiB)} | ${ratio(k?.writesTotal, l?.writesTotal)} |`,
      "",
      "API writes (from kube-apiserver's `apiserver_request_total`, first run; status code last): " +
        Object.entries(s.converge.runs as Record<string, { writes: Record<string, number> }[]>)
          .map(([who, runs]) =>
            `${who}: ${
              Object.entries(runs[0]?.writes ?? {}).map(([k, v]) => `${k} × ${v}`).join(", ")
            }`
          ).join("; ") +
        ".",
      "",
    );
  }
  if (s["converge-lag"]) lines.push(...renderConvergeLag(s["converge-lag"]));
  if (s.informer) {
    const c = s.informer.median;
    const k = c.kubeno, g = c["client-go"], n = c["client-node"];
    lines.push(
      `### Informer sync and memory (${fmt(s.informer.m)} ConfigMaps of ~1 KiB)`,
      "",
      "| contender | start → synced (ms) | spawn → synced (ms) | RSS per object (bytes) | heap per object (bytes) | RSS after sync (MiB) | peak RSS (MiB) | CPU (s) |",
      "|---|---:|---:|---:|---:|---:|---:|---:|",
    );
    for (const [name, x] of Object.entries(c) as [string, Record<string, number>][]) {
      lines.push(
        `| ${name} | ${fmt(x?.syncMs)} | ${fmt(x?.spawnToSyncedMs)} | ${fmt(x?.bytesPerObject)} | ${
          fmt(x?.heapBytesPerObject)
        } | ${fmt(x?.rssAfterMiB, 1)} | ${fmt(x?.peakRssMiB, 1)} | ${fmt(x?.cpuSec, 2)} |`,
      );
    }
    const row = (label: string, b: Record<string, number> | undefined) =>
      `| **${label}** | ${ratio(k?.syncMs, b?.syncMs)} | ${
        ratio(k?.spawnToSyncedMs, b?.spawnToSyncedMs)
      } | ${ratio(k?.bytesPerObject, b?.bytesPerObject)} | ${
        ratio(k?.heapBytesPerObject, b?.heapBytesPerObject)
      } | ${ratio(k?.rssAfterMiB, b?.rssAfterMiB)} | ${ratio(k?.peakRssMiB, b?.peakRssMiB)} | ${
        ratio(k?.cpuSec, b?.cpuSec)
      } |`;
    lines.push(row("kubeno / client-go", g));
    // The same wire format: kubeno reads JSON, which client-go asks for only when told to.
    const gj = c["client-go-json"], gjl = c["client-go-json-list"];
    if (gj) lines.push(row("kubeno / client-go over JSON (watch-list)", gj));
    if (gjl) lines.push(row("kubeno / client-go over JSON (paged list)", gjl));
    lines.push(row("kubeno / client-node", n));
    const md = c["kubeno-metadata"];
    if (md) {
      lines.push(
        `| **kubeno metadata-only / kubeno full** | ${ratio(md.syncMs, k?.syncMs)} | ${
          ratio(md.spawnToSyncedMs, k?.spawnToSyncedMs)
        } | ${ratio(md.bytesPerObject, k?.bytesPerObject)} | ${
          ratio(md.heapBytesPerObject, k?.heapBytesPerObject)
        } | ${ratio(md.rssAfterMiB, k?.rssAfterMiB)} | ${ratio(md.peakRssMiB, k?.peakRssMiB)} | ${
          ratio(md.cpuSec, k?.cpuSec)
        } |`,
      );
    }
    lines.push("");
  }
  if (s.latency) {
    const c = s.latency.median;
    const k = c.kubeno, g = c["controller-runtime"];
    lines.push(
      `### Event latency (${s.latency.objects} objects, ${s.latency.rate} writes/s for ${s.latency.seconds} s)`,
      "",
      "| contender | p50 (ms) | p99 (ms) | max (ms) | p50 from send (ms) | p99 from send (ms) | write → cache p99 (ms) | cache → reconcile p99 (ms) | writes matched | API writes |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    );
    for (const [name, x] of Object.entries(c) as [string, Record<string, number>][]) {
      lines.push(
        `| ${name} | ${fmt(x?.p50Ms, 2)} | ${fmt(x?.p99Ms, 2)} | ${fmt(x?.maxMs, 2)} | ${
          fmt(x?.p50FromSendMs, 2)
        } | ${fmt(x?.p99FromSendMs, 2)} | ${fmt(x?.p99ToEventMs, 2)} | ${
          fmt(x?.p99EventToStartMs, 2)
        } | ${fmt(x?.matched)} / ${fmt(x?.writes)} | ${fmt(x?.apiWritesTotal)} |`,
      );
    }
    lines.push(
      `| **kubeno − controller-runtime** | ${fmt(k?.p50Ms - g?.p50Ms, 2)} | ${
        fmt(k?.p99Ms - g?.p99Ms, 2)
      } | ${fmt(k?.maxMs - g?.maxMs, 2)} | ${fmt(k?.p50FromSendMs - g?.p50FromSendMs, 2)} | ${
        fmt(k?.p99FromSendMs - g?.p99FromSendMs, 2)
      } | ${fmt(k?.p99ToEventMs - g?.p99ToEventMs, 2)} | ${
        fmt(k?.p99EventToStartMs - g?.p99EventToStartMs, 2)
      } | | |`,
      "",
    );
  }
  if (s.storm) lines.push(...renderStorm(s.storm));
  if (s.footprint) {
    const c = s.footprint.median;
    lines.push(
      `### Footprint (the converge operator; loaded = ${
        fmt(s.footprint.objects)
      } Bench objects and their ConfigMaps cached)`,
      "",
      "| contender | start → ready (ms) | idle RSS, empty (MiB) | idle RSS, loaded (MiB) | RSS right after the burst (MiB) |",
      "|---|---:|---:|---:|---:|",
    );
    for (const [name, x] of Object.entries(c) as [string, Record<string, number>][]) {
      lines.push(
        `| ${name} | ${fmt(x?.startToReadyMs)} | ${fmt(x?.idleRssMiB, 1)} | ${
          fmt(x?.idleRssLoadedMiB, 1)
        } | ${fmt(x?.afterBurstRssMiB, 1)} |`,
      );
    }
    lines.push(
      "",
      "Idle RSS is read after 30 s without work (V8's memory reducer and Go's scavenger return " +
        "memory on their own schedule once idle); the last column is the RSS 1 s after the " +
        "converge burst.",
    );
    const b = s.footprint.bundle;
    lines.push(
      "",
      `Compiled payload (\`deno compile\`): ${s.footprint.compile}.`,
      "",
      `Bundle (\`deno bundle examples/myapp.ts\`, what \`deno compile\` adds to the runtime): ${
        b === undefined
          ? "not measured"
          : typeof b === "string"
          ? b
          : `${fmt(b.bytes / 1024 / 1024, 2)} MiB (${
            fmt(b.bytes)
          } bytes), @kubernetes/client-node ${b.clientNode ? "included" : "not included"}`
      }.`,
      "",
    );
  }
  // The charts are files next to results.json, written by full runs only.
  if (s.scale) lines.push(renderScale(s.scale, r.mode === "full" ? "bench" : undefined));
  if (s.micro) {
    lines.push(
      "### Microbenchmarks (`deno bench`, one core)",
      "",
      "| group | benchmark | time per iteration | events/s |",
      "|---|---|---:|---:|",
    );
    for (const b of s.micro as Record<string, any>[]) {
      lines.push(
        `| ${b.group} | ${b.name} | ${fmt(b.avgMs, 2)} ms | ${fmt(b.eventsPerSec)} |`,
      );
    }
    lines.push("");
  }
  return lines.join("\n");
}

/** The converge-lag table: work per object with the operators' watches delivered late. */
function renderConvergeLag(r: {
  n: number;
  watchLagMs: number;
  median: Record<string, Record<string, number>>;
  runs: Record<string, { writes: Record<string, number> }[]>;
}): string[] {
  const per = (x: number | undefined) => x === undefined ? undefined : x / r.n;
  const k = r.median.kubeno, g = r.median["controller-runtime"];
  const lines = [
    `### Converge with a lagging cache (N = ${fmt(r.n)} Bench objects, 4 workers, Bench and ` +
    `ConfigMap watches delivered ${fmt(r.watchLagMs)} ms late)`,
    "",
    "| contender | wall time (ms) | CPU (s) | API writes | writes per object | reconciles | reconciles per object |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const [name, x] of Object.entries(r.median)) {
    lines.push(
      `| ${name} | ${fmt(x?.wallMs)} | ${fmt(x?.cpuSec, 2)} | ${fmt(x?.writesTotal)} | ${
        fmt(per(x?.writesTotal), 2)
      } | ${fmt(x?.reconciles)} | ${fmt(per(x?.reconciles), 2)} |`,
    );
  }
  lines.push(
    `| **kubeno / controller-runtime** | ${ratio(k?.wallMs, g?.wallMs)} | ${
      ratio(k?.cpuSec, g?.cpuSec)
    } | ${ratio(k?.writesTotal, g?.writesTotal)} | | ${ratio(k?.reconciles, g?.reconciles)} | |`,
    "",
    "API writes (first run; status code last): " +
      Object.entries(r.runs).map(([who, runs]) =>
        `${who}: ${Object.entries(runs[0]?.writes ?? {}).map(([w, v]) => `${w} × ${v}`).join(", ")}`
      ).join("; ") +
      (k?.ownWriteEchoes === undefined ? "." : `. kubeno: ${fmt(k.ownWriteEchoes)} watch events ` +
        `were echoes of its own writes and started no reconcile; ${fmt(k.cacheWaits)} ` +
        `reconciles waited for the cache to show its own writes (${
          fmt(k.cacheWaitsExpired)
        } gave up).`),
    "",
  );
  return lines;
}

/** The storm table: one edit while the operator converges N objects from its start. */
function renderStorm(r: {
  n: number;
  edits?: number;
  editEveryMs?: number;
  editAfterMs: number;
  median: Record<string, Record<string, number>>;
}): string[] {
  const label: Record<string, string> = {
    kubeno: "kubeno (priority queue)",
    "kubeno-fifo": "kubeno (priority queue off)",
    "controller-runtime": "controller-runtime (priority queue, its default)",
  };
  const cols = (x: Record<string, number> | undefined) =>
    [
      fmt(x?.editToReconcileMs, 1),
      fmt(x?.firstEditToReconcileMs, 1),
      fmt(x?.editToReconcileFromSendMs, 1),
      fmt(x?.editToWorkMs, 1),
      fmt(x?.editToVisibleMs, 1),
      fmt(x?.editToEventMs, 1),
      fmt(x?.reconcilesAhead),
      fmt(x?.readyMs),
      fmt(x?.editAtMs),
      fmt(x?.drainMs),
      fmt(x?.cpuSec, 2),
      fmt(x?.peakRssMiB, 1),
      fmt(x?.writesTotal),
    ].join(" | ");
  const ratios = (a: Record<string, number> | undefined, b: Record<string, number> | undefined) =>
    [
      ratio(a?.editToReconcileMs, b?.editToReconcileMs),
      ratio(a?.firstEditToReconcileMs, b?.firstEditToReconcileMs),
      ratio(a?.editToReconcileFromSendMs, b?.editToReconcileFromSendMs),
      ratio(a?.editToWorkMs, b?.editToWorkMs),
      ratio(a?.editToVisibleMs, b?.editToVisibleMs),
      "",
      "",
      "",
      "",
      ratio(a?.drainMs, b?.drainMs),
      ratio(a?.cpuSec, b?.cpuSec),
      ratio(a?.peakRssMiB, b?.peakRssMiB),
      ratio(a?.writesTotal, b?.writesTotal),
    ].join(" | ");
  const k = r.median.kubeno, f = r.median["kubeno-fifo"], g = r.median["controller-runtime"];
  return [
    `### Edit during the start-up storm (N = ${fmt(r.n)} Bench objects, 4 workers, ` +
    `${fmt(r.edits)} edits ${fmt(r.editEveryMs)} ms apart from ` +
    `${fmt(r.editAfterMs)} ms after the operator's spawn)`,
    "",
    "| contender | edit → reconcile (ms) | first edit → reconcile (ms) | the same from send (ms) | edit → converge work (ms) | edit → status visible (ms) | edit → cache (ms) | reconciles ahead of it | spawn → ready (ms) | spawn → edit (ms) | drain: spawn → all converged (ms) | CPU (s) | peak RSS (MiB) | API writes |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...Object.entries(r.median).map(([name, x]) => `| ${label[name] ?? name} | ${cols(x)} |`),
    `| **kubeno / controller-runtime** | ${ratios(k, g)} |`,
    `| **kubeno priority / priority off** | ${ratios(k, f)} |`,
    "",
    "Each latency is the median over the run's edits (then the median of the runs), except " +
    "first edit → reconcile, the edit one second after the spawn alone. " +
    "Edit → reconcile runs from the edit's response as read by the harness; the operator can " +
    "start the reconcile before the harness has read that response (the watch event and the " +
    "response race), so values near 0 can be negative; from send includes the edit's round " +
    "trip and never is. Edit → reconcile ends when a worker takes the key (kubeno: the work " +
    "queue hands it out; controller-runtime: its Reconcile is called); edit → converge work " +
    "ends where the reconcile function's own work starts once the finalizer is on (kubeno: " +
    "the reconcile function, which the framework calls after adding the finalizer; " +
    "controller-runtime: the peer's code after its finalizer patch), so it includes that write.",
    "",
  ];
}

const BEGIN = "<!-- results:begin (generated by bench/run.ts; edit the prose outside) -->";
const END = "<!-- results:end -->";

/**
 * Replaces the generated part of BENCHMARKS.md (between its markers) with `table`, creating
 * the file with the markers when it does not exist.
 *
 * @param path The file.
 * @param table The generated Markdown.
 */
export async function updateMarkdown(path: string, table: string): Promise<void> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch {
    text = `# Benchmarks\n\n${BEGIN}\n${END}\n`;
  }
  if (!(text.includes(BEGIN) && text.indexOf(END) > text.indexOf(BEGIN))) {
    text = `${text.trimEnd()}\n\n${BEGIN}\n${END}\n`;
  }
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  await Deno.writeTextFile(
    path,
    text.slice(0, start) + `${BEGIN}\n\n${table.trim()}\n\n${END}` + text.slice(end + END.length),
  );
}
