/**
 * The worker stage: takes a key from the work queue and makes one attempt at it — controller-
 * runtime's `processNextWorkItem` and `reconcileHandler`, kube-rs's runner.
 *
 * ## Flow
 *
 * 1. A timer call running for the key ends first (timers and reconciles never overlap).
 * 2. The key's object is read from the cache; a key whose object is gone is forgotten.
 * 3. The write gate says whether the cache shows the key's last writes; if not, the key waits
 *    there (without this worker) and the attempt ends here.
 * 4. One `reconcile` span: a child of the first real change that queued the key, linked to
 *    every other cause the queue merged into it (`cause_links.ts`).
 * 5. The attempt: the reconcile's own copy of the object, its context (`../context/`), the
 *    call through the finalizer when the controller has one, and the one status write of
 *    what it set as it ends, bounded by `timeoutMs` (`_attempt.ts`).
 * 6. After a failure, the error status (`_error_status.ts`): `onError`'s status, and the
 *    `RetriesExhausted` condition after the last of `retry.maxAttempts`.
 * 7. The outcome switch (`_outcome.ts`): forget, requeue after, retry with backoff, or not at
 *    all for a `TerminalError` or the last attempt. A requeue or retry links the next
 *    reconcile to this one.
 *
 * {@linkcode Workers} runs `maxConcurrent` of these loops, the last `reservedWorkers` of
 * them taking only real changes.
 *
 * @module
 */
import type { Client } from "../../../client/client.ts";
import type { KubeObject } from "../../../core/object.ts";
import { kindKey } from "../../../core/kind_key.ts";
import type { Clock } from "../../../util/clock.ts";
import { dataCopy } from "../../../util/freeze.ts";
import type { Logger } from "../../../util/log.ts";
import { inSpan } from "../../../util/trace.ts";
import { DEFAULT_PRIORITY, type WorkQueue } from "../../queue/workqueue.ts";
import type { Background } from "../../source/background.ts";
import type { EventRecorder } from "../events.ts";
import { finalizer } from "../finalizer.ts";
import type { ControllerMetricsHooks, ReconcileOutcome } from "../metrics_hooks.ts";
import type { Controller, ReconcileResult } from "../reconcile.ts";
import { type ContextHandle, createContext } from "../context/context.ts";
import { boundedAttempt } from "./_attempt.ts";
import { settle, type Settled } from "./_outcome.ts";
import { retryInfoOf, writeErrorStatus } from "./_error_status.ts";
import type { CauseLinks } from "./cause_links.ts";
import type { ControllerInformers } from "./informers.ts";
import { appliedKey, type WriteGate } from "./write_gate.ts";

/** What a worker reads, writes and reports to. */
export interface WorkerInit<T extends KubeObject> {
  readonly controller: Controller<T>;
  readonly client: Client;
  readonly events: EventRecorder;
  /** The controller's logger. */
  readonly log: Logger;
  readonly clock: Clock;
  readonly queue: WorkQueue<string>;
  readonly informers: ControllerInformers<T>;
  readonly gate: WriteGate;
  readonly background: Background<T>;
  readonly causes: CauseLinks;
  readonly metrics?: ControllerMetricsHooks;
  /** The cluster's name when a fleet runs the controller. */
  readonly cluster?: string;
  /** Aborts every attempt's signal (shutdown gave up waiting). */
  readonly signal: AbortSignal;
  /** Runs after each attempt (the run-time watches are chosen again). */
  readonly attempted: () => void;
}

/**
 * The worker loops of one controller, and which primaries they are reconciling.
 *
 * @typeParam T The primary object type.
 */
export class Workers<T extends KubeObject> {
  readonly #init: WorkerInit<T>;
  readonly #loops: Promise<void>[] = [];
  // Primaries being reconciled, by key, and who waits for some of them to end.
  readonly #inFlight = new Map<string, KubeObject>();
  readonly #idleWaiters = new Set<{ busy: () => boolean; resolve: () => void }>();
  #active = 0;
  #stopping = false;

  /** @param init What the attempts read, write and report to. */
  constructor(init: WorkerInit<T>) {
    this.#init = init;
  }

  /**
   * Reconciles being run now.
   *
   * @returns Their count.
   */
  get active(): number {
    return this.#active;
  }

  /**
   * Whether a reconcile of `key` is running.
   *
   * @param key The primary's key.
   * @returns `true` while one is.
   */
  busy(key: string): boolean {
    return this.#inFlight.has(key);
  }

  /**
   * Starts the loops: `maxConcurrent`, of which the last `reservedWorkers` take only changes,
   * so low-priority keys never hold them all.
   */
  start(): void {
    const { maxConcurrent, reservedWorkers = 0 } = this.#init.controller;
    for (let i = 0; i < maxConcurrent; i++) {
      this.#loops.push(this.#loop(i >= maxConcurrent - reservedWorkers));
    }
  }

  /**
   * Takes no new key from now on.
   *
   * @returns A promise that resolves once every loop ended (the queue drained and shut down).
   */
  stop(): Promise<void> {
    this.#stopping = true;
    return Promise.all(this.#loops).then(() => {});
  }

  /**
   * Waits until no reconcile of a primary matching `matches` is in flight.
   *
   * @param matches Which primaries to wait for.
   * @returns A promise that resolves once none is being reconciled.
   */
  async idle(matches: (obj: KubeObject) => boolean): Promise<void> {
    const busy = () => [...this.#inFlight.values()].some(matches);
    if (busy()) await new Promise<void>((resolve) => this.#idleWaiters.add({ busy, resolve }));
  }

  async #loop(changesOnly: boolean): Promise<void> {
    const { queue, metrics, controller } = this.#init;
    const options = changesOnly ? { minPriority: DEFAULT_PRIORITY } : undefined;
    for (;;) {
      const item = await queue.get(options);
      if (item.shutdown) return;
      const key = item.key;
      if (this.#stopping) {
        queue.done(key);
        continue;
      }
      metrics?.activeWorkers?.(controller.name, ++this.#active);
      try {
        await this.#take(key);
      } finally {
        this.#ended(key);
        queue.done(key);
        metrics?.activeWorkers?.(controller.name, --this.#active);
      }
    }
  }

  /** Steps 1 to 3 of the flow, then the attempt. */
  async #take(key: string): Promise<void> {
    const { background, informers, queue, gate, causes } = this.#init;
    const timer = background.hold(key);
    if (timer) await timer;
    const cached = informers.get(key);
    if (!cached) {
      queue.forget(key);
      gate.forget(key);
      causes.take(key);
      return;
    }
    if (!gate.mayRun(key)) return;
    // In flight from the moment it was read from the cache, with no await in between: a
    // share leaving the cache either takes this object out first or waits for it.
    this.#inFlight.set(key, cached);
    await attempt(this.#init, key, cached);
    this.#init.attempted();
  }

  #ended(key: string): void {
    if (!this.#inFlight.delete(key)) return;
    for (const w of this.#idleWaiters) {
      if (w.busy()) continue;
      this.#idleWaiters.delete(w);
      w.resolve();
    }
  }
}

/**
 * One attempt at `key` in its `reconcile` span: a child of the first real change that queued
 * it, linked to every other cause the queue merged into it; its API calls, finalizer and logs
 * are inside it.
 */
async function attempt<T extends KubeObject>(
  init: WorkerInit<T>,
  key: string,
  cached: T,
): Promise<void> {
  const { controller, causes } = init;
  const caused = causes.take(key);
  const reconcileID = crypto.randomUUID();
  await inSpan("reconcile", () => ({
    "kubeno.controller": controller.name,
    "kubeno.key": key,
    "kubeno.reconcile_id": reconcileID,
    "k8s.kind": controller.resource.kind,
    "k8s.namespace.name": cached.metadata.namespace,
    "k8s.object.name": cached.metadata.name,
    "kubeno.reconcile.causes": caused.count,
  }), async (span) => {
    const { result, settled, requeued } = await reconcileOnce(init, key, cached, reconcileID);
    span.set({
      "kubeno.reconcile.result": result,
      "kubeno.reconcile.requeue_after_ms": settled.ok ? settled.result?.requeueAfterMs : undefined,
    });
    if (!settled.ok) span.error(settled.error);
    // A requeue or retry is what queues the next reconcile: it links back to this one.
    if (requeued) causes.add(key, span.link(), false);
  }, { parent: caused.parent, links: caused.links, root: true });
}

/** The attempt itself: its context, the bounded run, the outcome switch. */
async function reconcileOnce<T extends KubeObject>(
  init: WorkerInit<T>,
  key: string,
  cached: T,
  reconcileID: string,
): Promise<{ result: ReconcileOutcome; settled: Settled; requeued: boolean }> {
  const { controller, clock, metrics, queue, events } = init;
  // The reconcile's own copy: it may change it; the frozen cached object stays as the
  // server's state that "nothing changed" is judged against.
  const obj = dataCopy(cached);
  // Bounded by `timeoutMs`: past it the attempt's signal aborts, its context refuses to
  // write, and this worker stops waiting for it (it settles as a TimeoutError, retried
  // after the key's backoff); however the abandoned call ends later is ignored.
  const bounded = boundedAttempt({
    key,
    timeoutMs: controller.timeoutMs,
    clock,
    signal: init.signal,
  });
  const { handle, log } = contextOf(init, key, obj, cached, bounded.signal, reconcileID);
  const started = performance.now();
  const settled = await bounded.run(() => run(controller, init.client, obj, handle));
  if (bounded.timedOut) metrics?.timeout?.(controller.name);
  const retry = settled.ok ? undefined : retryInfoOf(controller, queue, key, settled.error);
  if (!settled.ok) {
    await writeErrorStatus(
      {
        controller,
        cached,
        log,
        // A cut attempt's context refuses writes: the error status goes through a fresh one.
        context: () =>
          bounded.signal.aborted && !init.signal.aborted
            ? contextOf(init, key, dataCopy(cached), cached, init.signal, reconcileID).handle.ctx
            : handle.ctx,
      },
      settled.error,
      retry!,
    );
  }
  const result = settle(key, settled, started, {
    controller: controller.name,
    queue,
    metrics,
    log,
    warn: (reason, message) => events.warning(obj, reason, message),
  }, retry);
  const requeued = result !== "success" && result !== "terminal" && !retry?.last;
  return { result, settled, requeued };
}

/** The context of one reconcile of `key`, and its logger. */
function contextOf<T extends KubeObject>(
  init: WorkerInit<T>,
  key: string,
  obj: T,
  cached: T,
  signal: AbortSignal,
  reconcileID: string,
): { handle: ContextHandle<T>; log: Logger } {
  const { controller: c, informers, gate, cluster } = init;
  // controller-runtime's reconcile log fields, so log queries carry over.
  const log = init.log.with({
    ...(cluster ? { cluster } : {}),
    controller: c.name,
    namespace: obj.metadata.namespace ?? "",
    name: obj.metadata.name,
    reconcileID,
    key,
  });
  const owned = ownedKinds(c);
  const handle = createContext({
    controller: c,
    client: init.client,
    events: init.events,
    log,
    key,
    primary: obj,
    cached,
    cache: informers.reader.withDefaultNamespace(obj.metadata.namespace),
    cluster,
    signal,
    memory: gate.memory,
    tracking: gate.tracking(key),
    owned: (kind, name, namespace) => {
      if (!owned.has(kindKey(kind))) return undefined;
      const ns = kind.namespaced ? namespace : undefined;
      let cachedChild: KubeObject | undefined;
      try {
        cachedChild = informers.reader.get(kind, name, { namespace: ns });
      } catch {
        // Not in a namespace this controller caches: nothing to compare with.
      }
      return { key: appliedKey(kind, { metadata: { name, namespace: ns } }), cached: cachedChild };
    },
  });
  return { handle, log };
}

const OWNED = new WeakMap<Controller<any>, ReadonlySet<string>>();

/** The kind keys of what a controller owns (for the write memory of its applies). */
function ownedKinds(c: Controller<any>): ReadonlySet<string> {
  let kinds = OWNED.get(c);
  if (!kinds) OWNED.set(c, kinds = new Set(c.owns.map((res) => kindKey(res))));
  return kinds;
}

/**
 * Calls the user's reconcile, through the finalizer when the controller has one; the status it
 * set is written once as it ends (with `observedGeneration` after a reconcile that returned).
 */
async function run<T extends KubeObject>(
  c: Controller<T>,
  client: Client,
  obj: T,
  handle: ContextHandle<T>,
): Promise<ReconcileResult> {
  const ctx = handle.ctx;
  const reconciled = (o: T) =>
    handle.finish(
      () => c.reconcile(o, ctx),
      c.observedGeneration ? o.metadata.generation : undefined,
    );
  if (!c.finalizer) return await reconciled(obj);
  // The finalizer writes go through the context: computed from and guarded by the
  // newest state it knows (the reconcile's own status writes included).
  return await finalizer(
    client,
    c.resource,
    c.finalizer,
    obj,
    (ev) =>
      ev.type === "cleanup"
        ? handle.finish(() => c.finalize!(ev.object, ctx))
        // After the add: the server's answer, which is also the context's own state.
        : reconciled(ev.object === obj ? obj : dataCopy(ev.object)),
    { write: (patch) => handle.patchPrimary(patch) },
  );
}
