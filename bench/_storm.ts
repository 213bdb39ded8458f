// The start-up storm scenario (issue 26): an operator starts with N Bench objects to
// converge, and one second in, while its queue still holds most of them, someone edits one
// object's spec. How long that edit waits behind the storm is what a priority queue changes:
// one that queues the objects of the initial list at low priority and later watch events at
// normal priority (controller-runtime's does) reconciles the edited object next instead of
// after everything queued before it.
import { createClient } from "../src/client/client.ts";
import { Bench, NAMESPACE } from "./_bench_resource.ts";
import type { Command } from "./_peers.ts";
import {
  apiRequests,
  delta,
  exitReport,
  MiB,
  raceExit,
  readStartLog,
  type RunContext,
  spawn,
  withCluster,
  writeCounts,
} from "./_scenarios.ts";
import { benchName, ConvergeWatch, createBenches, installWorkload } from "./_workload.ts";

/** How long after the operator's spawn the harness makes its first edit, ms. */
export const EDIT_AFTER_MS = 1_000;

/** How many objects the harness edits during one storm, one after another. */
export const EDITS = 10;

/** The time between two edits' sends, ms. */
export const EDIT_EVERY_MS = 250;

/** What one edit measured. */
interface EditSample {
  toReconcile: number;
  fromSend: number;
  toWork: number;
  toEvent: number;
  toVisible: number;
  ahead: number;
}

/** One storm run: each latency is the median over its {@linkcode EDITS} edits. */
export interface StormRun {
  /** From spawning the contender until it reported its caches synced ("ready"), ms. */
  readyMs: number;
  /** From spawning the contender until the first edit's response, ms. */
  editAtMs: number;
  /** How many edits the run made (and the medians below are over). */
  edits: number;
  /**
   * From an edit's response until the operator started reconciling the edited generation
   * (its start log: a worker took the key), ms: the event-latency scenario's measure.
   */
  editToReconcileMs: number;
  /** The same for the first edit alone, the one {@linkcode EDIT_AFTER_MS} after the spawn. */
  firstEditToReconcileMs: number;
  /** The same from when the edit was sent (includes the edit's own round trip), ms. */
  editToReconcileFromSendMs: number;
  /**
   * From the edit's response until the reconcile's converge work started (the finalizer on:
   * kubeno's reconcile function, the Go peer's code after its finalizer patch), ms. The
   * edited object had not been reconciled before, so this includes the finalizer's write.
   */
  editToWorkMs: number;
  /** From the edit's response until the update event reached the operator's cache, ms. */
  editToEventMs: number;
  /**
   * From the edit's response until the harness's watch showed the operator's status write
   * for the edited generation (`status.observedGeneration`), ms.
   */
  editToVisibleMs: number;
  /**
   * Reconciles the operator started after the edit's response and before the edited
   * object's, from its start log: how much of the storm the edit waited behind.
   */
  reconcilesAhead: number;
  /**
   * From spawning the contender until every object, the edited ones at their new
   * generations, had converged, ms (the converge scenario's wall time).
   */
  drainMs: number;
  /** Contender CPU seconds once it went idle. */
  cpuSec: number;
  /** Peak RSS, MiB. */
  peakRssMiB: number;
  /** Writes the API server served on benches and configmaps until idle, less the edits. */
  writesTotal: number;
  /** The same by verb, resource and status code. */
  writes: Record<string, number>;
  /** Reconciles the contender ran (its `controller_runtime_reconcile_total`, printed at exit). */
  reconciles?: number;
}

function median(xs: number[]): number {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Edit during the start-up storm: N Bench objects exist; the contender starts; one second
 * after its spawn (or once it reports its caches synced, if that is later, so that the edit
 * reaches it as a watch event and not as part of its initial list) the harness merge-patches
 * `spec.value` of the last Bench in list order, the one a first-in-first-out queue reaches
 * last, and then every {@linkcode EDIT_EVERY_MS} ms the next from the end, {@linkcode EDITS}
 * in all. One edit's latency is mostly how long the in-flight reconciles still take, a
 * different draw each time; the median over the edits of a run is steady where one edit is
 * not. Measures edit → reconcile of each object as the event-latency scenario does (the first
 * reconcile start in the operator's start log that sees the edited generation), edit → its
 * status write visible to the harness, and the time until all N have converged.
 *
 * @param ctx Flags, progress, scratch folder.
 * @param n Number of Bench objects.
 * @param command Builds the operator's command from the kubeconfig and the start-log path.
 * @param name The contender's name.
 * @param options `editAfterMs`: how long after the spawn the first edit goes out (default
 * 1,000); `edits`: how many (default {@linkcode EDITS}, at most N).
 * @returns The measurements.
 */
export function runStorm(
  ctx: RunContext,
  n: number,
  command: (kubeconfig: string, startsPath: string) => Command,
  name: string,
  options: { editAfterMs?: number; edits?: number } = {},
): Promise<StormRun> {
  const editAfterMs = options.editAfterMs ?? EDIT_AFTER_MS;
  const count = Math.min(options.edits ?? EDITS, n);
  return withCluster(ctx, async (cp) => {
    using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
    await installWorkload(admin);
    await createBenches(admin, n);
    // Names sort like their numbers, and lists come in key order: these are listed last.
    const targets = Array.from({ length: count }, (_, i) => benchName(n - 1 - i));
    const startsPath = `${ctx.tmp}/starts-storm-${name}-${Date.now()}.log`;
    await using watch = await new ConvergeWatch(admin, n).start();
    const before = await apiRequests(cp);
    await using contender = spawn(name, command(cp.kubeconfigPath, startsPath));
    const ready = await contender.waitForLine((l) => l === "ready", 60_000 + n * 10);
    const first = Math.max(contender.spawnedAt + editAfterMs, performance.now());
    const edits: { target: string; sentAt: number; editAt: number; generation: number }[] = [];
    const visible: Promise<number>[] = [];
    for (const [i, target] of targets.entries()) {
      const wait = first + i * EDIT_EVERY_MS - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const sentAt = performance.now();
      const edited = await admin.patch(Bench, target, { spec: { value: "edited" } }, {
        namespace: NAMESPACE,
      });
      const generation = edited.metadata.generation!;
      edits.push({ target, sentAt, editAt: performance.now(), generation });
      const seen = raceExit(contender, watch.observed(target, generation), 60_000 + n * 100);
      seen.catch(() => {}); // awaited below; not unhandled meanwhile
      visible.push(seen);
    }
    const visibleAt = await Promise.all(visible);
    // The first moment all N were current; if that came before the harness saw the last
    // edit, the edited objects converged last, when their new status became visible.
    const drainAt = Math.max(
      await raceExit(contender, watch.converged, 60_000 + n * 100),
      ...visibleAt,
    );
    const idle = await contender.settle(500, 30_000);
    const served = delta(await apiRequests(cp), before);
    // Less the harness's own edits.
    served["PATCH benches 200"] -= count;
    const writes = writeCounts(served);
    const code = await contender.stop();
    if (code !== 0) {
      throw new Error(`${name} exited with code ${code}: ${await contender.stderrTail()}`);
    }

    // The start log holds wall-clock ms since the epoch, the harness's clock on this machine.
    const epoch = (t: number) => performance.timeOrigin + t;
    const log = await readStartLog(startsPath);
    const samples: EditSample[] = edits.map((e, i) => {
      const at = (kind: "R" | "U" | "E") =>
        log[kind].get(e.target)?.find((s) => s.generation >= e.generation)?.at ?? NaN;
      const start = at("R");
      if (Number.isNaN(start)) {
        throw new Error(`${name} logged no reconcile of ${e.target} at generation ${e.generation}`);
      }
      let ahead = 0;
      for (const starts of log.R.values()) {
        for (const s of starts) if (s.at > epoch(e.editAt) && s.at < start) ahead++;
      }
      return {
        toReconcile: start - epoch(e.editAt),
        fromSend: start - epoch(e.sentAt),
        toWork: at("U") - epoch(e.editAt),
        toEvent: at("E") - epoch(e.editAt),
        toVisible: visibleAt[i] - e.editAt,
        ahead,
      };
    });
    const med = (f: (s: EditSample) => number) => median(samples.map(f));
    return {
      readyMs: ready.at - contender.spawnedAt,
      editAtMs: edits[0].editAt - contender.spawnedAt,
      edits: count,
      editToReconcileMs: med((s) => s.toReconcile),
      firstEditToReconcileMs: samples[0].toReconcile,
      editToReconcileFromSendMs: med((s) => s.fromSend),
      editToWorkMs: med((s) => s.toWork),
      editToEventMs: med((s) => s.toEvent),
      editToVisibleMs: med((s) => s.toVisible),
      reconcilesAhead: med((s) => s.ahead),
      drainMs: drainAt - contender.spawnedAt,
      cpuSec: idle.cpuSeconds,
      peakRssMiB: idle.peakRssKiB / MiB,
      ...writes,
      ...exitReport(contender),
    };
  });
}
