// The benchmark's scenarios. Each run gets a fresh control plane (same kube-apiserver flags
// for every contender), a workload created by the harness, and one contender process whose
// CPU time and memory are read from /proc the same way whatever its language.
import { createClient } from "../src/client/client.ts";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { startLagProxy } from "../src/testing/lag_proxy.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { Bench, NAMESPACE } from "./_bench_resource.ts";
import type { Command } from "./_peers.ts";
import { Contender } from "./_proc.ts";
import {
  benchName,
  ConvergeWatch,
  createBenches,
  createConfigMaps,
  installWorkload,
} from "./_workload.ts";

/** What every scenario needs. */
export interface RunContext {
  /** Extra kube-apiserver flags, the same for every contender. */
  apiServerFlags: string[];
  /** Where progress lines go. */
  progress: (line: string) => void;
  /** A scratch folder for logs. */
  tmp: string;
}

/** One converge run. */
export interface ConvergeRun {
  /** From spawning the contender until every object had converged, ms. */
  wallMs: number;
  /** Contender CPU seconds when convergence was seen. */
  cpuAtConvergeSec: number;
  /** Contender CPU seconds once it went idle (echo reconciles of its own writes included). */
  cpuSec: number;
  /** Peak RSS, MiB. */
  peakRssMiB: number;
  /** Writes the API server served on benches and configmaps until idle. */
  writesTotal: number;
  /** The same by verb, resource and status code. */
  writes: Record<string, number>;
  /**
   * Reconciles the contender ran (its `controller_runtime_reconcile_total`, printed at exit);
   * absent for contenders that do not report it (kube-rs, the limit).
   */
  reconciles?: number;
  /** kubeno only: watch events that were echoes of its own writes and queued nothing. */
  ownWriteEchoes?: number;
  /** kubeno only: reconciles that waited for the cache to show the controller's own writes. */
  cacheWaits?: number;
  /** kubeno only: of those, waits that gave up before the cache showed the writes. */
  cacheWaitsExpired?: number;
}

/** What a converge contender may print as its last stdout line at exit. */
const REPORTED = ["reconciles", "ownWriteEchoes", "cacheWaits", "cacheWaitsExpired"] as const;

/** The total of write counts by verb, resource and status code, with the counts. */
export function writeCounts(writes: Record<string, number>) {
  return { writesTotal: Object.values(writes).reduce((a, b) => a + b, 0), writes };
}

/** KiB per MiB. */
export const MiB = 1024;

/**
 * Runs `fn` on a fresh control plane with the run's kube-apiserver flags, stopped after.
 *
 * @param ctx Flags, progress, scratch folder.
 * @param fn The run.
 * @returns What `fn` returns.
 */
export async function withCluster<R>(
  ctx: RunContext,
  fn: (cp: Awaited<ReturnType<typeof startControlPlane>>) => Promise<R>,
): Promise<R> {
  await using cp = await startControlPlane({ apiServerFlags: ctx.apiServerFlags });
  return await fn(cp);
}

type Cluster = Awaited<ReturnType<typeof startControlPlane>>;

/**
 * Counts the API server's requests on benches and configmaps by verb, resource and status
 * code, from its /metrics, to check that every contender does the same work.
 */
export async function apiRequests(cp: Cluster): Promise<Record<string, number>> {
  const text = String((await cp.request("GET", "/metrics")).body);
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const label = (k: string) => line.match(new RegExp(`${k}="([^"]*)"`))?.[1] ?? "";
    const resource = label("resource");
    if (resource !== "benches" && resource !== "configmaps") continue;
    const verb = label("verb");
    if (verb === "WATCH" || verb === "LIST" || verb === "GET") continue;
    const sub = label("subresource");
    const key = `${verb} ${resource}${sub ? `/${sub}` : ""} ${label("code")}`;
    out[key] = (out[key] ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return out;
}

/** Subtracts request counts `before` from `after`. */
export function delta(after: Record<string, number>, before: Record<string, number>) {
  return Object.fromEntries(
    Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => v !== 0),
  );
}

/** Spawns a contender from its command. */
export function spawn(name: string, c: Command): Contender {
  return new Contender(name, c.cmd, c.args, { cwd: c.cwd, env: c.env });
}

/**
 * Waits for `p`, failing when the contender exits first or `deadlineMs` passes.
 *
 * @param contender The contender.
 * @param p What to wait for.
 * @param deadlineMs How long to wait.
 * @returns What `p` resolves with.
 * @throws {Error} When the contender exited or the deadline passed.
 */
export async function raceExit<T>(
  contender: Contender,
  p: Promise<T>,
  deadlineMs: number,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let poll: ReturnType<typeof setInterval> | undefined;
  const fail = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${contender.name} did not finish within ${deadlineMs} ms`)),
      deadlineMs,
    );
    poll = setInterval(async () => {
      if (contender.exitCode === undefined) return;
      clearInterval(poll);
      reject(
        new Error(
          `${contender.name} exited with code ${contender.exitCode}:\n${await contender
            .stderrTail()}`,
        ),
      );
    }, 100);
  });
  try {
    return await Promise.race([p, fail]);
  } finally {
    clearTimeout(timer);
    clearInterval(poll);
  }
}

/**
 * Converge: N Bench objects exist; the contender starts; wall time until every one is
 * current and owns its ConfigMap, as seen by the harness's own watch.
 *
 * With `watchLagMs`, the contender talks to the API server through a lag proxy
 * (`startLagProxy`) that delivers every byte of its Bench and ConfigMap watches that much
 * late (lists and writes pass at once): its cache trails the server by `watchLagMs`. The
 * harness's own watch and the write counts still go to the API server directly.
 *
 * @param ctx Flags, progress, scratch folder.
 * @param n Number of Bench objects.
 * @param command Builds the contender's command from the kubeconfig path.
 * @param name The contender's name.
 * @param options `watchLagMs`: how late the contender's watches are delivered (default 0: no
 * proxy).
 * @returns The measurements.
 */
export function runConverge(
  ctx: RunContext,
  n: number,
  command: (kubeconfig: string) => Command,
  name: string,
  options: { watchLagMs?: number } = {},
): Promise<ConvergeRun> {
  const lagMs = options.watchLagMs ?? 0;
  return withCluster(ctx, async (cp) => {
    using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
    await installWorkload(admin);
    await createBenches(admin, n);
    await using watch = await new ConvergeWatch(admin, n).start();
    await using proxy = lagMs > 0 ? await startLagProxy({ kubeconfig: cp.kubeconfigPath }) : null;
    for (const kind of [Bench, ConfigMap]) {
      proxy?.delay({ group: kind.group, resource: kind.plural }, lagMs);
    }
    const before = await apiRequests(cp);
    await using contender = spawn(name, command(proxy?.kubeconfigPath ?? cp.kubeconfigPath));
    const at = await raceExit(contender, watch.converged, 60_000 + n * 100);
    const converged = contender.sample();
    // Idle means no CPU for longer than the lag: the echoes of the last writes are still on
    // their way meanwhile, and what they start counts.
    const idle = await contender.settle(500 + 2 * lagMs, 30_000 + 4 * lagMs);
    const writes = writeCounts(delta(await apiRequests(cp), before));
    await contender.stop();
    return {
      wallMs: at - contender.spawnedAt,
      cpuAtConvergeSec: converged.cpuSeconds,
      cpuSec: idle.cpuSeconds,
      peakRssMiB: idle.peakRssKiB / MiB,
      ...writes,
      ...exitReport(contender),
    };
  });
}

/** The counters a converge contender printed as a JSON line at exit, if it did. */
export function exitReport(contender: Contender): Partial<Record<typeof REPORTED[number], number>> {
  const line = contender.lines.findLast((l) => l.startsWith("{"));
  if (!line) return {};
  const r = JSON.parse(line);
  return Object.fromEntries(REPORTED.filter((k) => typeof r[k] === "number").map((k) => [k, r[k]]));
}

/** One informer-sync run. */
export interface InformerRun {
  /** Objects in the informer's cache after sync. */
  objects: number;
  /** From the informer's start until synced, ms (measured in the contender). */
  syncMs: number;
  /** From spawning the contender until it reported, ms. */
  spawnToSyncedMs: number;
  /** RSS after sync minus before, per object, bytes (after a forced GC). */
  bytesPerObject: number;
  /** Live heap after sync minus before, per object, bytes (after a forced GC). */
  heapBytesPerObject: number;
  /** RSS after sync (after a forced GC), MiB. */
  rssAfterMiB: number;
  /** Peak RSS, MiB. */
  peakRssMiB: number;
  /** Contender CPU seconds until it reported. */
  cpuSec: number;
  /** What the contender said besides (e.g. client-go's list mode). */
  extra?: Record<string, unknown>;
}

/**
 * Informer sync and memory: M ConfigMaps of ~1 KiB exist; the contender starts an informer
 * over them and reports time to synced and RSS before/after.
 *
 * @param ctx Flags, progress, scratch folder.
 * @param m Number of ConfigMaps.
 * @param command Builds the contender's command from the kubeconfig path and namespace.
 * @param name The contender's name.
 * @returns The measurements.
 */
export function runInformer(
  ctx: RunContext,
  m: number,
  command: (kubeconfig: string, namespace: string) => Command,
  name: string,
): Promise<InformerRun> {
  return withCluster(ctx, async (cp) => {
    using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
    await installWorkload(admin);
    await createConfigMaps(admin, m);
    await using contender = spawn(name, command(cp.kubeconfigPath, NAMESPACE));
    const { line, at } = await contender.waitForLine((l) => l.startsWith("{"), 120_000 + m * 20);
    const s = contender.sample();
    const r = JSON.parse(line);
    const {
      objects,
      syncMs,
      bytesPerObject,
      heapBytesPerObject,
      rssAfterKiB,
      rssBeforeKiB: _,
      ...extra
    } = r;
    if (objects !== m) throw new Error(`${name} cached ${objects} ConfigMaps, expected ${m}`);
    return {
      objects,
      syncMs,
      spawnToSyncedMs: at - contender.spawnedAt,
      bytesPerObject,
      heapBytesPerObject,
      rssAfterMiB: rssAfterKiB / MiB,
      peakRssMiB: s.peakRssKiB / MiB,
      cpuSec: s.cpuSeconds,
      ...(Object.keys(extra).length ? { extra } : {}),
    };
  });
}

/** One event-latency run. */
export interface LatencyRun {
  /** Writes made. */
  writes: number;
  /** Writes whose reconcile start was seen. */
  matched: number;
  /** Latency from a write's response to its reconcile start, ms: median, p99, max. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The same from when the write was sent (includes the write's own round trip), ms. */
  p50FromSendMs: number;
  p99FromSendMs: number;
  /** From the write's response until the update event reached the operator's cache, ms. */
  p50ToEventMs: number;
  p99ToEventMs: number;
  /** From the event reaching the cache until the reconcile started (queue + worker), ms. */
  p50EventToStartMs: number;
  p99EventToStartMs: number;
  /** Writes the API server served on benches and configmaps during the writer's run. */
  apiWritesTotal: number;
  /** The same by verb, resource and status code. */
  apiWrites: Record<string, number>;
}

/**
 * Event latency: K converged Bench objects; a writer merge-patches `spec.value` of one of
 * them (round robin) at a steady rate; latency is the time from each write's response to
 * the first reconcile start that sees that generation, from the contender's log.
 *
 * @param ctx Flags, progress, scratch folder.
 * @param opts Objects, rate (writes/s) and duration (s).
 * @param command Builds the operator's command from the kubeconfig and the start-log path.
 * @param name The contender's name.
 * @returns The measurements.
 */
export function runLatency(
  ctx: RunContext,
  opts: { objects: number; rate: number; seconds: number },
  command: (kubeconfig: string, startsPath: string) => Command,
  name: string,
): Promise<LatencyRun> {
  return withCluster(ctx, async (cp) => {
    using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
    await installWorkload(admin);
    await createBenches(admin, opts.objects);
    const startsPath = `${ctx.tmp}/starts-${name}-${Date.now()}.log`;
    await using watch = await new ConvergeWatch(admin, opts.objects).start();
    await using contender = spawn(name, command(cp.kubeconfigPath, startsPath));
    await raceExit(contender, watch.converged, 120_000);
    await contender.settle(500, 30_000);
    const before = await apiRequests(cp);

    const total = Math.round(opts.rate * opts.seconds);
    const writes: { name: string; generation: number; sent: number; at: number }[] = [];
    const t0 = performance.now();
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      // Steady schedule: write i goes out at t0 + i/rate, whatever earlier writes took.
      const due = t0 + (i * 1000) / opts.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const target = benchName(i % opts.objects);
      const sent = performance.timeOrigin + performance.now();
      inflight.push(
        admin.patch(Bench, target, { spec: { value: `u-${i}` } }, { namespace: NAMESPACE })
          .then((b) => {
            writes.push({
              name: target,
              generation: b.metadata.generation!,
              sent,
              at: performance.timeOrigin + performance.now(),
            });
          }),
      );
    }
    await Promise.all(inflight);
    await raceExit(contender, watch.current(), 60_000);
    await contender.settle(500, 30_000);
    const writesServed = delta(await apiRequests(cp), before);
    const code = await contender.stop();
    if (code !== 0) {
      throw new Error(`${name} exited with code ${code}: ${await contender.stderrTail()}`);
    }

    const log = await readStartLog(startsPath);
    const latencies: number[] = [];
    const fromSend: number[] = [];
    const toEvent: number[] = [];
    const eventToStart: number[] = [];
    for (const w of writes) {
      const first = log.R.get(w.name)?.find((s) => s.generation >= w.generation);
      if (!first) continue;
      latencies.push(first.at - w.at);
      fromSend.push(first.at - w.sent);
      const ev = log.E.get(w.name)?.find((s) => s.generation >= w.generation);
      if (ev) {
        toEvent.push(ev.at - w.at);
        eventToStart.push(first.at - ev.at);
      }
    }
    const pct = (xs: number[], p: number) => {
      const s = [...xs].sort((a, b) => a - b);
      return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN;
    };
    return {
      writes: writes.length,
      matched: latencies.length,
      p50Ms: pct(latencies, 0.5),
      p99Ms: pct(latencies, 0.99),
      maxMs: pct(latencies, 1),
      p50FromSendMs: pct(fromSend, 0.5),
      p99FromSendMs: pct(fromSend, 0.99),
      p50ToEventMs: pct(toEvent, 0.5),
      p99ToEventMs: pct(toEvent, 0.99),
      p50EventToStartMs: pct(eventToStart, 0.5),
      p99EventToStartMs: pct(eventToStart, 0.99),
      apiWritesTotal: writeCounts(writesServed).writesTotal,
      apiWrites: writesServed,
    };
  });
}

/** One entry of a start log: a Bench's generation and when, ms since the epoch. */
export interface Start {
  generation: number;
  at: number;
}

/**
 * What an operator's start log (`--starts`) says, per Bench, in the order written:
 * `R` reconcile starts (a worker took the key), `U` the converge work's start (the finalizer
 * is on: where kubeno's reconcile function starts) and `E` update events reaching its cache.
 */
export type StartLog = Record<"R" | "U" | "E", Map<string, Start[]>>;

/**
 * Reads and deletes an operator's start log ("R|U|E name generation epoch-ms" lines).
 *
 * @param path The file the operator wrote at exit.
 * @returns The log.
 */
export async function readStartLog(path: string): Promise<StartLog> {
  const log: StartLog = { R: new Map(), U: new Map(), E: new Map() };
  for (const line of (await Deno.readTextFile(path)).split("\n")) {
    const [kind, n, g, t] = line.split(" ");
    if (!t || (kind !== "R" && kind !== "U" && kind !== "E")) continue;
    const list = log[kind].get(n) ?? [];
    list.push({ generation: Number(g), at: Number(t) });
    log[kind].set(n, list);
  }
  await Deno.remove(path).catch(() => {});
  return log;
}

/** One footprint run. */
export interface FootprintRun {
  /** From spawn to "ready" (caches synced), ms, with no objects. */
  startToReadyMs: number;
  /** Idle RSS with no objects, MiB, after {@link IDLE_MS} without work. */
  idleRssMiB: number;
  /** Idle RSS with the objects converged and cached, MiB, after {@link IDLE_MS} without work. */
  idleRssLoadedMiB: number;
  /** RSS right after the converge burst (1 s without CPU use), MiB. */
  afterBurstRssMiB: number;
  /** Objects in the loaded case. */
  objects: number;
}

/**
 * How long an operator sits without work before its idle RSS is read. Runtimes give memory
 * back on their own schedule once idle: V8's memory reducer starts about 8 s after the last
 * allocation burst and shrank the converge operator from 133 to 96 MiB 25 s after 1,000
 * objects converged; Go's background scavenger returns pages over a similar time. A
 * long-running operator spends its life in that state, so that is what "idle" measures; the
 * RSS right after the burst is reported beside it.
 */
export const IDLE_MS = 30_000;

/**
 * Footprint: start-to-ready and idle RSS of an operator with no objects, then idle RSS of a
 * fresh one with `objects` Bench objects (and their ConfigMaps) converged and cached.
 *
 * @param ctx Flags, progress, scratch folder.
 * @param objects Objects in the loaded case.
 * @param command Builds the operator's command from the kubeconfig path.
 * @param name The contender's name.
 * @param idleMs How long the operator sits without work before idle RSS is read.
 * @returns The measurements.
 */
export async function runFootprint(
  ctx: RunContext,
  objects: number,
  command: (kubeconfig: string) => Command,
  name: string,
  idleMs = IDLE_MS,
): Promise<FootprintRun> {
  const empty = await withCluster(ctx, async (cp) => {
    using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
    await installWorkload(admin);
    await using contender = spawn(name, command(cp.kubeconfigPath));
    const { at } = await contender.waitForLine((l) => l === "ready", 60_000);
    await contender.settle(1_000, 30_000);
    const idle = await idleSample(contender, idleMs);
    return { startToReadyMs: at - contender.spawnedAt, idleRssMiB: idle.rssKiB / MiB };
  });
  const loaded = await withCluster(ctx, async (cp) => {
    using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
    await installWorkload(admin);
    await createBenches(admin, objects);
    await using watch = await new ConvergeWatch(admin, objects).start();
    await using contender = spawn(name, command(cp.kubeconfigPath));
    await raceExit(contender, watch.converged, 60_000 + objects * 100);
    const burst = await contender.settle(1_000, 30_000);
    const idle = await idleSample(contender, idleMs);
    return { idle: idle.rssKiB / MiB, burst: burst.rssKiB / MiB };
  });
  return {
    ...empty,
    idleRssLoadedMiB: loaded.idle,
    afterBurstRssMiB: loaded.burst,
    objects,
  };
}

/** The contender's sample after `idleMs` more without work. */
async function idleSample(contender: Contender, idleMs: number) {
  await new Promise((r) => setTimeout(r, idleMs));
  return contender.sample();
}
