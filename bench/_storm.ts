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

/** How long after the operator's spawn the harness edits one object, ms. */
export const EDIT_AFTER_MS = 1_000;

/** One storm run. */
export interface StormRun {
  /** From spawning the contender until it reported its caches synced ("ready"), ms. */
  readyMs: number;
  /** From spawning the contender until the edit's response, ms. */
  editAtMs: number;
  /**
   * From the edit's response until the operator started reconciling the edited generation
   * (its start log), ms: the event-latency scenario's measure.
   */
  editToReconcileMs: number;
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
   * From spawning the contender until every object, the edited one at its new generation,
   * had converged, ms (the converge scenario's wall time).
   */
  drainMs: number;
  /** Contender CPU seconds once it went idle. */
  cpuSec: number;
  /** Peak RSS, MiB. */
  peakRssMiB: number;
  /** Writes the API server served on benches and configmaps until idle, less the edit. */
  writesTotal: number;
  /** The same by verb, resource and status code. */
  writes: Record<string, number>;
  /** Reconciles the contender ran (its `controller_runtime_reconcile_total`, printed at exit). */
  reconciles?: number;
}

/**
 * Edit during the start-up storm: N Bench objects exist; the contender starts; one second
 * after its spawn (or once it reports its caches synced, if that is later, so that the edit
 * reaches it as a watch event and not as part of its initial list) the harness merge-patches
 * `spec.value` of the last Bench in list order, the one a first-in-first-out queue reaches
 * last. Measures edit → reconcile of that object as the event-latency scenario does (the
 * first reconcile start in the operator's start log that sees the edited generation), edit →
 * its status write visible to the harness, and the time until all N have converged.
 *
 * @param ctx Flags, progress, scratch folder.
 * @param n Number of Bench objects.
 * @param command Builds the operator's command from the kubeconfig and the start-log path.
 * @param name The contender's name.
 * @param options `editAfterMs`: how long after the spawn the edit goes out (default 1,000).
 * @returns The measurements.
 */
export function runStorm(
  ctx: RunContext,
  n: number,
  command: (kubeconfig: string, startsPath: string) => Command,
  name: string,
  options: { editAfterMs?: number } = {},
): Promise<StormRun> {
  const editAfterMs = options.editAfterMs ?? EDIT_AFTER_MS;
  return withCluster(ctx, async (cp) => {
    using admin = await createClient({ kubeconfig: cp.kubeconfigPath });
    await installWorkload(admin);
    await createBenches(admin, n);
    // Names sort like their numbers, and lists come in key order: this one is listed last.
    const target = benchName(n - 1);
    const startsPath = `${ctx.tmp}/starts-storm-${name}-${Date.now()}.log`;
    await using watch = await new ConvergeWatch(admin, n).start();
    const before = await apiRequests(cp);
    await using contender = spawn(name, command(cp.kubeconfigPath, startsPath));
    const ready = await contender.waitForLine((l) => l === "ready", 60_000 + n * 10);
    const wait = contender.spawnedAt + editAfterMs - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));

    const sentAt = performance.now();
    const edited = await admin.patch(Bench, target, { spec: { value: "edited" } }, {
      namespace: NAMESPACE,
    });
    const editAt = performance.now();
    const generation = edited.metadata.generation!;
    const visibleAt = await raceExit(
      contender,
      watch.observed(target, generation),
      60_000 + n * 100,
    );
    // The first moment all N were current; if that came before the harness saw the edit, the
    // edited object converged last, when its new status became visible.
    const drainAt = Math.max(
      await raceExit(contender, watch.converged, 60_000 + n * 100),
      visibleAt,
    );
    const idle = await contender.settle(500, 30_000);
    const served = delta(await apiRequests(cp), before);
    // Less the harness's own edit.
    served["PATCH benches 200"] -= 1;
    const writes = writeCounts(served);
    const code = await contender.stop();
    if (code !== 0) {
      throw new Error(`${name} exited with code ${code}: ${await contender.stderrTail()}`);
    }

    // The start log holds wall-clock ms since the epoch, the harness's clock on this machine.
    const epoch = (t: number) => performance.timeOrigin + t;
    const log = await readStartLog(startsPath);
    const start = log.R.get(target)?.find((s) => s.generation >= generation);
    const event = log.E.get(target)?.find((s) => s.generation >= generation);
    const work = log.U.get(target)?.find((s) => s.generation >= generation);
    if (!start) {
      throw new Error(`${name} logged no reconcile of ${target} at generation ${generation}`);
    }
    let ahead = 0;
    for (const starts of log.R.values()) {
      for (const s of starts) if (s.at > epoch(editAt) && s.at < start.at) ahead++;
    }
    return {
      readyMs: ready.at - contender.spawnedAt,
      editAtMs: editAt - contender.spawnedAt,
      editToReconcileMs: start.at - epoch(editAt),
      editToReconcileFromSendMs: start.at - epoch(sentAt),
      editToWorkMs: work ? work.at - epoch(editAt) : NaN,
      editToEventMs: event ? event.at - epoch(editAt) : NaN,
      editToVisibleMs: visibleAt - editAt,
      reconcilesAhead: ahead,
      drainMs: drainAt - contender.spawnedAt,
      cpuSec: idle.cpuSeconds,
      peakRssMiB: idle.peakRssKiB / MiB,
      ...writes,
      ...exitReport(contender),
    };
  });
}
