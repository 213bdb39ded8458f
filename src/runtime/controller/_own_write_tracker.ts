// One controller's own writes between its reconcile contexts and its work queue: the
// runner-side half of read-your-own-writes and echo filtering (`_own_writes.ts` is the
// bookkeeping, ARCHITECTURE.md the whole story).
//
// - The context announces each write before sending it (`begin`) and settles it with the
//   server's answer: the write is recorded when the cache will show it.
// - Every informer event of a cached kind goes through `observe`: it confirms the writes it
//   shows, wakes the keys that waited for them, and names the primaries it is the echo of.
// - `queue` then puts a key in the work queue, unless the event is that key's echo; an event
//   for a primary still sending a write of that kind waits for the answers, since the echo
//   may arrive before the answer, and is queued only if it is not one of them.
// - Before a reconcile, `caughtUp` tells whether the cache shows the primary's last writes;
//   if not, the key waits (without a worker) until it does or `lagTimeoutMs` passes.
import type { Clock, TimerId } from "../../util/clock.ts";
import type { Logger } from "../../util/log.ts";
import { frozenCopy } from "../../util/freeze.ts";
import { kindKey, parseKindKey } from "../../core/kind_key.ts";
import type { KubeObject } from "../../core/object.ts";
import { objectKey, parseObjectKey } from "../../core/object_key.ts";
import type { Resource } from "../../core/resource.ts";
import type { InformerReader } from "../cache/reader.ts";
import type { ShardFilter } from "../cache/shard_filter.ts";
import type { ObjectEvent } from "../watch/watch.ts";
import type { CachedKind } from "./caches.ts";
import type { TrackedWrite, Tracking } from "./_context.ts";
import type { ControllerMetricsHooks, QueueCause } from "./metrics_hooks.ts";
import { DEFAULT_PRIORITY } from "../queue/workqueue.ts";
import { type CacheView, isEcho, type OwnWrite, OwnWrites } from "./_own_writes.ts";

/** What {@linkcode OwnWriteTracker} works with. */
export interface OwnWriteTrackerInit {
  /** Controller name, for metrics and logs. */
  readonly controller: string;
  /** The primary kind. */
  readonly primary: Resource<any>;
  /** Every kind the controller caches. */
  readonly kinds: readonly CachedKind[];
  /** The controller's cache. */
  readonly reader: InformerReader;
  readonly clock: Clock;
  /** How long a key waits for the cache to show its writes. */
  readonly lagTimeoutMs: number;
  readonly metrics?: ControllerMetricsHooks;
  readonly shard?: { filter: ShardFilter; owned: boolean };
  readonly log: Logger;
  /** Puts a key in the work queue, why, and at what priority (default: the queue's). */
  add(key: string, cause: QueueCause, priority?: number): void;
}

/** Writes of one kind a primary's reconcile is sending, and the events that came meanwhile. */
interface Sending {
  count: number;
  events: { ev: ObjectEvent<KubeObject>; cause: QueueCause; priority?: number }[];
  answers: ({ key: string } & Pick<OwnWrite, "op" | "rv" | "base" | "mixed">)[];
}
const SEP = "\u0001";

/**
 * A kind as the write tracker names it: full and metadata-only caches count as one.
 *
 * @param res The kind, full or metadata-only.
 * @returns Its kind key as the full kind.
 */
export function trackKey(res: Resource<any>): string {
  return kindKey(res, { metadataOnly: false });
}

/**
 * Whether a cached kind is cached through the replica's shard filter: the primary, and
 * namespaced owned kinds when `shard.owned` (children share their owner's shard).
 *
 * @param kind The cached kind.
 * @param shard The replica's share, if sharded.
 * @returns `true` when its cache holds only this replica's share.
 */
export function isSharded(kind: CachedKind, shard: { owned: boolean } | undefined): boolean {
  if (!shard) return false;
  return kind.roles.includes("primary") ||
    (shard.owned && kind.resource.namespaced && kind.roles.includes("owns"));
}

/** Tracks one controller's own writes until its cache shows them. */
export class OwnWriteTracker {
  readonly #init: OwnWriteTrackerInit;
  // Writes the cache has not shown, keys waiting for them.
  readonly #writes = new OwnWrites();
  readonly #deferred = new Map<string, TimerId>();
  readonly #tracked = new Map<string, CachedKind>();
  readonly #view: CacheView;
  // Writes being sent, by primary and kind: their events wait for the answers, to tell an
  // echo (which may arrive before the answer) from news.
  readonly #sending = new Map<string, Sending>();

  /** @param init The controller's cache, clock, bound, metrics and queue. */
  constructor(init: OwnWriteTrackerInit) {
    this.#init = init;
    for (const kind of init.kinds) this.#tracked.set(trackKey(kind.resource), kind);
    this.#view = {
      lookup: (kind, key) => {
        const res = this.#tracked.get(kind)?.resource;
        const inf = res && init.reader.informerOf(res, parseObjectKey(key).namespace);
        return inf && { object: inf.store.get(key), watermark: inf.store.resourceVersion };
      },
    };
  }

  /**
   * What the context of one reconcile of `primary` reports its writes to.
   *
   * @param primary The primary's key.
   * @returns The context's tracking.
   */
  tracking(primary: string): Tracking {
    return {
      begin: (res) => this.#begin(primary, res),
      pending: (res) => this.#writes.of(primary, trackKey(res)),
      matches: (res, o, opts) => this.#init.reader.matches(res, o, opts),
    };
  }

  /**
   * Takes in one event of a cached kind: confirms the controller's writes it shows, wakes
   * the keys that waited for them, and returns the primaries it is the echo of.
   *
   * @param kind The event's {@linkcode trackKey}.
   * @param ev The event.
   * @returns The primaries whose own write the event is.
   */
  observe<U extends KubeObject>(kind: string, ev: ObjectEvent<U>): ReadonlySet<string> {
    const { echoes, touched } = this.#writes.observe(
      kind,
      ev.type,
      ev.object,
      ev.type === "modified" ? ev.old : undefined,
    );
    for (const key of touched) if (this.#deferred.has(key)) this.#wake(key);
    return echoes;
  }

  /**
   * Queues the keys an event maps to, one add per key: the old and new state of an object
   * usually map to the same primaries, and a key handed to a waiting worker by the first add
   * would be queued again by the second. See {@linkcode OwnWriteTracker.prototype.queue}.
   *
   * @param keys The primaries' keys.
   * @param echoes What {@linkcode OwnWriteTracker.prototype.observe} returned for the event.
   * @param cause Why, for metrics.
   * @param kind The event's {@linkcode trackKey}.
   * @param ev The event.
   * @param priority The keys' priority in the work queue.
   */
  enqueue(
    keys: Set<string>,
    echoes: ReadonlySet<string>,
    cause: QueueCause,
    kind: string,
    ev: ObjectEvent<KubeObject>,
    priority?: number,
  ): void {
    for (const k of keys) this.queue(k, echoes, cause, kind, ev, priority);
  }

  /**
   * Queues one primary for an event: not when the event is the echo of its own write; once
   * the answers are in when it is sending a write of this kind.
   *
   * @param key The primary's key.
   * @param echoes What {@linkcode OwnWriteTracker.prototype.observe} returned for the event.
   * @param cause Why, for metrics.
   * @param kind The event's {@linkcode trackKey}.
   * @param ev The event.
   * @param priority The key's priority in the work queue.
   */
  queue(
    key: string,
    echoes: ReadonlySet<string>,
    cause: QueueCause,
    kind: string,
    ev: ObjectEvent<KubeObject>,
    priority?: number,
  ): void {
    if (echoes.has(key)) return this.#init.metrics?.echo?.(this.#init.controller);
    const sending = this.#sending.get(key + SEP + kind);
    if (sending) sending.events.push({ ev, cause, priority });
    else this.#init.add(key, cause, priority);
  }

  /**
   * Read-your-own-writes: whether the cache shows what the last reconciles of `key` wrote
   * (or the wait for it expired, which is logged); if not, the key is put aside until it
   * does.
   *
   * @param key The primary's key.
   * @returns `true` when the reconcile may run now.
   */
  caughtUp(key: string): boolean {
    const { controller, clock, lagTimeoutMs, metrics, log } = this.#init;
    const lag = this.#writes.lagging(key, this.#view, clock.now(), lagTimeoutMs);
    for (const w of lag.expired) {
      metrics?.cacheLag?.(controller, "expired");
      log.warn(
        "Cache of {kind} {object} did not show the {op} of resourceVersion {rv} by controller {controller} within {ms} ms; reconciling {key} without waiting for it",
        {
          kind: parseKindKey(w.kind).kind,
          object: w.key,
          op: w.op,
          rv: w.rv ?? "",
          controller,
          ms: lagTimeoutMs,
          key,
        },
      );
    }
    if (lag.waiting.length) {
      this.#defer(key, lag.waiting);
      return false;
    }
    this.undefer(key);
    return true;
  }

  /**
   * Forgets every write of a primary (it was deleted, or is gone from the cache).
   *
   * @param key The primary's key.
   */
  forget(key: string): void {
    this.#writes.forget(key);
  }

  /**
   * Stops a key's wait for the cache, without queueing it.
   *
   * @param key The primary's key.
   */
  undefer(key: string): void {
    const id = this.#deferred.get(key);
    if (id === undefined) return;
    this.#init.clock.clearTimeout(id);
    this.#deferred.delete(key);
  }

  /** Stops every key's wait for the cache. */
  stop(): void {
    for (const key of [...this.#deferred.keys()]) this.undefer(key);
  }

  /** A write of `res` made while reconciling `primary` is about to be sent. */
  #begin(primary: string, res: Resource<any>): (w: TrackedWrite | undefined) => void {
    const id = primary + SEP + trackKey(res);
    let sending = this.#sending.get(id);
    if (!sending) this.#sending.set(id, sending = { count: 0, events: [], answers: [] });
    const s = sending;
    s.count++;
    let settled = false;
    return (w) => {
      if (settled) return;
      settled = true;
      if (w) {
        this.#record(primary, res, w);
        s.answers.push({
          key: objectKey({ name: w.name, namespace: w.namespace }),
          op: w.op,
          rv: w.answer?.metadata.resourceVersion,
          base: w.base,
          mixed: w.mixed,
        });
      }
      if (--s.count > 0) return;
      this.#sending.delete(id);
      // Events that came while the writes were on their way: echoes of them, or news.
      let news: QueueCause | undefined;
      let priority: number | undefined;
      for (const { ev, cause, priority: p } of s.events) {
        const key = objectKey(ev.object);
        const old = ev.type === "modified" ? ev.old?.metadata.resourceVersion : undefined;
        const echo = s.answers.some((a) =>
          a.key === key && isEcho(a, ev.type, ev.object.metadata.resourceVersion, old)
        );
        if (echo) this.#init.metrics?.echo?.(this.#init.controller);
        else {
          news ??= cause;
          // The highest asked for, as the queue keeps for a key added twice.
          priority = Math.max(priority ?? -Infinity, p ?? DEFAULT_PRIORITY);
        }
      }
      if (news) this.#init.add(primary, news, priority);
    };
  }

  /** Records a write made while reconciling `primary`, when the cache will show it. */
  #record(primary: string, res: Resource<any>, w: TrackedWrite): void {
    const { reader, shard } = this.#init;
    const kind = trackKey(res);
    const cachedKind = this.#tracked.get(kind);
    if (!cachedKind || !reader.informerOf(cachedKind.resource, w.namespace)) return;
    const answer = w.answer;
    // Only writes the cache will show: not one outside its label selector or shard (a field
    // selector cannot be judged here, so such a kind is not waited for).
    if (cachedKind.fieldSelector) return;
    if (answer && cachedKind.labelSelector) {
      const selector = { labelSelector: cachedKind.labelSelector };
      if (!reader.matches(cachedKind.resource, answer, selector)) return;
    }
    if (answer && shard && isSharded(cachedKind, shard) && !shard.filter.matches(answer)) return;
    const isPrimary = kind === trackKey(this.#init.primary);
    this.#writes.record(primary, {
      kind,
      key: objectKey({ name: w.name, namespace: w.namespace }),
      op: w.op,
      rv: answer?.metadata.resourceVersion,
      base: w.base,
      ...(w.mixed ? { mixed: true } : {}),
      uid: w.uid,
      // What ctx.cache shows until the cache has it; the primary is the context's own. A copy:
      // the reconcile gets `answer` itself back and may change it.
      object: answer && !isPrimary ? frozenCopy(answer) : undefined,
      at: this.#init.clock.now(),
    });
  }

  /** Puts `key` aside until the cache shows `waiting` (or the bound passes). */
  #defer(key: string, waiting: readonly OwnWrite[]): void {
    if (this.#deferred.has(key)) return;
    const { controller, clock, lagTimeoutMs, metrics } = this.#init;
    metrics?.cacheLag?.(controller, "deferred");
    const oldest = Math.min(...waiting.map((w) => w.at));
    const due = Math.max(0, oldest + lagTimeoutMs - clock.now());
    this.#deferred.set(
      key,
      clock.setTimeout(() => {
        if (!this.#deferred.delete(key)) return;
        this.#init.add(key, "cache-timeout");
      }, due),
    );
  }

  /** Queues a deferred key once the cache shows every write it waited for. */
  #wake(key: string): void {
    const { clock, lagTimeoutMs } = this.#init;
    const lag = this.#writes.lagging(key, this.#view, clock.now(), lagTimeoutMs);
    if (lag.waiting.length) return;
    this.undefer(key);
    this.#init.add(key, "cache");
  }
}
