/**
 * The write gate: the stage between the sources and the work queue that knows the
 * controller's own writes. Every informer event passes through it on its way to the queue,
 * and every reconcile asks it whether the key may run.
 *
 * ## Flow
 *
 * - The reconcile context announces each write before sending it (`tracking(key).begin`)
 *   and settles it with the server's answer: the write is recorded when the cache will show
 *   it (not one outside the kind's label selector or this replica's shard).
 * - The sources hand every event of a cached kind to {@linkcode WriteGate.prototype.pass}
 *   with the keys it maps to. The gate confirms the writes the event shows, wakes the keys
 *   that waited for them, and for each key decides: the event is that key's **echo** (its
 *   own write coming back: counted, not queued); the key is **sending** a write of this kind
 *   (the event waits for the answers, since the echo may arrive before the answer, and is
 *   queued only if it is not one of them); or it is **news** (queued).
 * - Before a reconcile, {@linkcode WriteGate.prototype.mayRun} says whether the cache shows
 *   the key's last writes; if not, the key waits without a worker until it does (queued with
 *   cause `cache`) or `lagTimeoutMs` passes (queued with cause `cache-timeout`, the write
 *   logged and counted as expired).
 *
 * ## Read-your-own-writes
 *
 * Every write made through a reconcile context records the resourceVersion the server
 * returned (client-go's ReplicaSet expectations, Kubernetes 1.36's KEP-5647 "skip until the
 * informer caught up", Java Operator SDK's own-write cache). The next reconcile of that
 * primary starts only once each recorded write is in the cache, judged with comparable
 * resourceVersions (KEP-5504):
 *
 * - a write or create: the cached object's resourceVersion is at least the written one, or
 *   the object is absent while the cache as a whole is past that version (someone else
 *   deleted it since);
 * - a delete: the object is gone from the cache (or the cache holds another object, a new
 *   uid, of that name), or shows the deletion (its resourceVersion at least the one the
 *   delete returned, `deletionTimestamp` set).
 *
 * Where resourceVersions are not comparable (an older or foreign server), a write is in the
 * cache once a watch event carried exactly its resourceVersion (events arrive in order).
 *
 * ## Echoes
 *
 * A watch event that is exactly one of these writes — its new resourceVersion the written
 * one, its old one the version the write was made on — is the write's echo: it starts no
 * reconcile of the primary that wrote it (anything else changed in between gives another
 * old version, and does). That holds only when the server made the answered version for
 * this write. A patch or apply made on a stale cached version that changes nothing on the
 * server answers the object as someone else left it (a deletion, a new spec), at their
 * version; and a relist hands the cache that version with the stale one as its old state.
 * So a write whose answer differs from the object it was made on anywhere the write did not
 * set is marked `mixed` (`wroteOnly` in `../context/tracking.ts`): its event is news, never
 * an echo.
 *
 * ## Not sending a write again
 *
 * - Owned objects: the hash of the last applied desired object per owned object. A later
 *   apply is skipped when the desired object hashes the same (nothing was added, changed or
 *   dropped since) and the cached object still holds every field of it (nobody changed or
 *   removed them since). Anything else — a new desired state, a change by someone else, a
 *   deletion (its event forgets the entry), an object the cache does not hold — is applied.
 * - Status: the hash of the last status patch per primary and the resourceVersion its write
 *   returned. While the cached primary is older than that write, the same patch again is
 *   skipped; once the cache has caught up, the cache decides alone (the context's subset
 *   check).
 *
 * Memory: one number per owned object and one small entry per primary.
 *
 * @module
 */
import type { Clock, TimerId } from "../../../util/clock.ts";
import type { Logger } from "../../../util/log.ts";
import { frozenCopy } from "../../../util/freeze.ts";
import { kindKey, parseKindKey } from "../../../core/kind_key.ts";
import { compareResourceVersions, type KubeObject } from "../../../core/object.ts";
import { objectKey, type ObjectName, parseObjectKey } from "../../../core/object_key.ts";
import type { Resource } from "../../../core/resource.ts";
import type { InformerReader } from "../../cache/reader.ts";
import type { ShardFilter } from "../../cache/shard_filter.ts";
import type { ObjectEvent } from "../../watch/watch.ts";
import { DEFAULT_PRIORITY } from "../../queue/workqueue.ts";
import type { CachedKind } from "../caches.ts";
import type { Cause, ControllerMetricsHooks } from "../metrics_hooks.ts";
import type { OwnWrite, TrackedWrite, Tracking, WriteMemory } from "../context/tracking.ts";
import type { Intake } from "./intake.ts";

/** One informer event and the keys its source mapped it to: what the sources hand the gate. */
export interface KeyedEvent {
  /** The event's kind, as cached (full or metadata-only). */
  readonly resource: Resource<any>;
  /** The same kind as the gate names it: {@linkcode trackKey} of `resource`. */
  readonly kind: string;
  readonly event: ObjectEvent<KubeObject>;
  /** The primaries the event maps to. */
  readonly keys: Iterable<string>;
  /** Why they would be queued. */
  readonly cause: Cause;
  /** Their priority in the work queue. */
  readonly priority: number;
  /** A predicate refused the event: its keys are only checked for echoes, never queued. */
  readonly refused?: boolean;
}

/** What {@linkcode WriteGate} works with. */
export interface WriteGateInit {
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
  /** The next stage: the work queue's input. */
  readonly intake: Intake;
}

/**
 * A kind as the write gate names it: full and metadata-only caches count as one.
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

/**
 * An owned object's identity in the write memory: its kind (full or metadata-only) and its
 * object key.
 *
 * @param res The owned kind.
 * @param obj The object, or its name and namespace.
 * @returns The identity.
 */
export function appliedKey(res: Resource<any>, obj: KubeObject | ObjectName): string {
  return `${kindKey(res)}\u0000${objectKey(obj)}`;
}

/** Writes of one kind a primary's reconcile is sending, and the events that came meanwhile. */
interface Sending {
  count: number;
  events: { ev: ObjectEvent<KubeObject>; cause: Cause; priority?: number }[];
  answers: ({ key: string } & Pick<OwnWrite, "op" | "rv" | "base" | "mixed">)[];
}
const SEP = "\u0001";

/** The write gate of one controller. See the module doc for the flow. */
export class WriteGate {
  readonly #init: WriteGateInit;
  // Writes the cache has not shown, and what was last written (to not send it again).
  readonly #writes = new OwnWrites();
  readonly #last = new LastWrites();
  // Keys waiting for the cache to show their writes, with the timer that gives up on it.
  readonly #deferred = new Map<string, TimerId>();
  readonly #tracked = new Map<string, CachedKind>();
  readonly #primaryKind: string;
  readonly #view: CacheView;
  // Writes being sent, by primary and kind: their events wait for the answers, to tell an
  // echo (which may arrive before the answer) from news.
  readonly #sending = new Map<string, Sending>();

  /** @param init The controller's cache, clock, bound, metrics and the queue stage. */
  constructor(init: WriteGateInit) {
    this.#init = init;
    this.#primaryKind = trackKey(init.primary);
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
   * What the reconcile contexts consult before writing: the controller's last writes.
   *
   * @returns The write memory.
   */
  get memory(): WriteMemory {
    return this.#last;
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
   * Takes in one event of a cached kind and the keys its source mapped it to: confirms the
   * writes it shows, wakes the keys that waited for them, forgets what a deletion ends, and
   * queues each key for which the event is news — not its echo, and not while that key is
   * still sending a write of this kind (then the event waits for the answers).
   *
   * @param keyed The event, its keys, cause and priority.
   */
  pass(keyed: KeyedEvent): void {
    const { kind, event: ev } = keyed;
    const { echoes, touched } = this.#writes.observe(
      kind,
      ev.type,
      ev.object,
      ev.type === "modified" ? ev.old : undefined,
    );
    for (const key of touched) if (this.#deferred.has(key)) this.#wake(key);
    if (ev.type === "deleted") this.#deleted(keyed);
    for (const key of keyed.keys) {
      if (echoes.has(key)) {
        this.#init.metrics?.echo?.(this.#init.controller);
        continue;
      }
      if (keyed.refused) continue;
      const sending = this.#sending.get(key + SEP + kind);
      if (sending) sending.events.push({ ev, cause: keyed.cause, priority: keyed.priority });
      else this.#init.intake.enqueue(key, keyed.cause, keyed.priority);
    }
  }

  /**
   * Read-your-own-writes: whether the cache shows what the last reconciles of `key` wrote
   * (or the wait for it expired, which is logged); if not, the key is put aside until it
   * does.
   *
   * @param key The primary's key.
   * @returns `true` when the reconcile may run now.
   */
  mayRun(key: string): boolean {
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
    this.#undefer(key);
    return true;
  }

  /**
   * Forgets every write of a primary that is gone from the cache.
   *
   * @param key The primary's key.
   */
  forget(key: string): void {
    this.#writes.forget(key);
  }

  /** Stops every key's wait for the cache. */
  stop(): void {
    for (const key of [...this.#deferred.keys()]) this.#undefer(key);
  }

  /** A deletion ends what was remembered of the object, and of a primary its writes. */
  #deleted({ resource, kind, event }: KeyedEvent): void {
    this.#last.forgetApplied(appliedKey(resource, event.object));
    if (kind !== this.#primaryKind) return;
    const key = objectKey(event.object);
    this.#last.forgetStatus(key);
    this.#writes.forget(key);
    this.#undefer(key);
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
      this.#answered(primary, s);
    };
  }

  /** Events that came while a primary's writes were on their way: echoes of them, or news. */
  #answered(primary: string, s: Sending): void {
    let news: Cause | undefined;
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
    if (news) this.#init.intake.enqueue(primary, news, priority);
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
      object: answer && kind !== this.#primaryKind ? frozenCopy(answer) : undefined,
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
        this.#init.intake.enqueue(key, "cache-timeout");
      }, due),
    );
  }

  /** Stops a key's wait for the cache, without queueing it. */
  #undefer(key: string): void {
    const id = this.#deferred.get(key);
    if (id === undefined) return;
    this.#init.clock.clearTimeout(id);
    this.#deferred.delete(key);
  }

  /** Queues a deferred key once the cache shows every write it waited for. */
  #wake(key: string): void {
    const { clock, lagTimeoutMs } = this.#init;
    const lag = this.#writes.lagging(key, this.#view, clock.now(), lagTimeoutMs);
    if (lag.waiting.length) return;
    this.#undefer(key);
    this.#init.intake.enqueue(key, "cache");
  }
}

/** How a cache looks from the gate: one object, and how far its informer has got. */
export interface CacheView {
  /**
   * The informer's view of one object of a kind, or `undefined` when this controller does
   * not cache that kind in that namespace (its writes are then not waited for).
   */
  lookup(kind: string, key: string): {
    object: KubeObject | undefined;
    /** The resourceVersion of the informer's latest list or event. */
    watermark: string | undefined;
  } | undefined;
}

/** What {@linkcode OwnWrites.lagging} found for one primary. */
export interface Lag {
  /** Writes the cache has not shown yet, within the bound. */
  readonly waiting: readonly OwnWrite[];
  /** Writes it has not shown past the bound: given up on (now forgotten). */
  readonly expired: readonly OwnWrite[];
}

// Earlier writes of one object kept for their echoes; more in one reconcile is unusual.
const MAX_CHAIN = 8;

interface Stored {
  write: OwnWrite;
  chain: Pick<OwnWrite, "op" | "rv" | "base" | "mixed">[];
}
const NONE: ReadonlySet<string> = new Set();

/** The writes of one controller that its cache has not shown yet. */
export class OwnWrites {
  // primary key -> object id -> its latest write, and the earlier ones it followed whose
  // echoes have not arrived yet (two writes of one object in one reconcile: a finalizer, then
  // the status)
  readonly #byPrimary = new Map<string, Map<string, Stored>>();
  // object id -> primaries with a write to it
  readonly #byObject = new Map<string, Set<string>>();

  /**
   * Records a write made while reconciling `primary`; it replaces an earlier one to the
   * same object.
   *
   * @param primary The primary's key.
   * @param write The write.
   */
  record(primary: string, write: OwnWrite): void {
    const id = write.kind + SEP + write.key;
    let writes = this.#byPrimary.get(primary);
    if (!writes) this.#byPrimary.set(primary, writes = new Map());
    const before = writes.get(id);
    const chain = before ? [...before.chain, before.write].slice(-MAX_CHAIN) : [];
    writes.set(id, { write, chain });
    let primaries = this.#byObject.get(id);
    if (!primaries) this.#byObject.set(id, primaries = new Set());
    primaries.add(primary);
  }

  /**
   * The writes of `primary` not yet confirmed, e.g. for `ctx.cache` to show.
   *
   * @param primary The primary's key.
   * @param kind Only writes to this kind.
   * @returns The writes.
   */
  of(primary: string, kind?: string): OwnWrite[] {
    const writes = this.#byPrimary.get(primary);
    if (!writes) return [];
    const out = [...writes.values()].map((s) => s.write);
    return kind === undefined ? out : out.filter((w) => w.kind === kind);
  }

  /**
   * Takes in one watch event of the cache: confirms the writes it shows, and tells whose
   * writes it is exactly the echo of.
   *
   * @param kind The event object's kind.
   * @param type The event type.
   * @param object The object as the event carries it.
   * @param old The previous object, for `modified`.
   * @returns `echoes`: primaries whose own write this event is (they need no reconcile for
   * it); `touched`: primaries with a write to this object, which may have caught up now.
   */
  observe(
    kind: string,
    type: "added" | "modified" | "deleted",
    object: KubeObject,
    old: KubeObject | undefined,
  ): { echoes: ReadonlySet<string>; touched: ReadonlySet<string> } {
    if (this.#byObject.size === 0) return { echoes: NONE, touched: NONE };
    const id = kind + SEP + keyOf(object);
    const primaries = this.#byObject.get(id);
    if (!primaries) return { echoes: NONE, touched: NONE };
    const rv = object.metadata.resourceVersion;
    const echoes = new Set<string>();
    const touched = new Set(primaries);
    for (const p of touched) {
      const stored = this.#byPrimary.get(p)?.get(id);
      if (!stored) {
        primaries.delete(p);
        continue;
      }
      const w = stored.write;
      const oldRv = old?.metadata.resourceVersion;
      if ([...stored.chain, w].some((x) => isEcho(x, type, rv, oldRv))) echoes.add(p);
      if (type === "deleted" || confirms(rv, w.rv)) this.#drop(p, id);
      else stored.chain = stored.chain.filter((x) => !confirms(rv, x.rv));
    }
    return { echoes, touched };
  }

  /**
   * Checks the writes of `primary` against the cache: forgets those it shows and those past
   * `timeoutMs`, and returns both kinds of what it does not show.
   *
   * @param primary The primary's key.
   * @param view The cache.
   * @param now Clock time.
   * @param timeoutMs How long a write may stay unseen.
   * @returns The writes still waited for, and those that expired.
   */
  lagging(primary: string, view: CacheView, now: number, timeoutMs: number): Lag {
    const writes = this.#byPrimary.get(primary);
    if (!writes) return { waiting: [], expired: [] };
    const waiting: OwnWrite[] = [];
    const expired: OwnWrite[] = [];
    for (const [id, { write: w }] of writes) {
      const seen = view.lookup(w.kind, w.key);
      if (!seen || inCache(w, seen.object, seen.watermark)) {
        this.#drop(primary, id);
      } else if (now - w.at >= timeoutMs) {
        expired.push(w);
        this.#drop(primary, id);
      } else {
        waiting.push(w);
      }
    }
    return { waiting, expired };
  }

  /**
   * Forgets every write of `primary` (it was deleted).
   *
   * @param primary The primary's key.
   */
  forget(primary: string): void {
    for (const id of [...(this.#byPrimary.get(primary)?.keys() ?? [])]) this.#drop(primary, id);
  }

  /** Primaries with writes not yet confirmed, for tests and metrics. */
  get size(): number {
    return this.#byPrimary.size;
  }

  #drop(primary: string, id: string): void {
    const writes = this.#byPrimary.get(primary);
    writes?.delete(id);
    if (writes?.size === 0) this.#byPrimary.delete(primary);
    const primaries = this.#byObject.get(id);
    primaries?.delete(primary);
    if (primaries?.size === 0) this.#byObject.delete(id);
  }
}

/** The object key of an object, as `objectKey` makes it. */
function keyOf(obj: KubeObject): string {
  const ns = obj.metadata.namespace;
  return ns ? `${ns}/${obj.metadata.name}` : obj.metadata.name ?? "";
}

/** Whether an event at `rv` shows a write that returned `written`. */
function confirms(rv: string | undefined, written: string | undefined): boolean {
  if (rv === undefined || written === undefined) return false;
  // Not comparable: only the write's own version confirms it (NaN >= 0 is false).
  return rv === written || compareResourceVersions(rv, written) >= 0;
}

/**
 * Whether an event is exactly the write `w`: its new resourceVersion the written one and its
 * old one the version the write was made on (or, for `added`, a create; for `deleted`, a
 * delete).
 */
export function isEcho(
  w: Pick<OwnWrite, "op" | "rv" | "base" | "mixed">,
  type: "added" | "modified" | "deleted",
  rv: string | undefined,
  oldRv: string | undefined,
): boolean {
  if (type === "deleted") return w.op === "delete" && (w.rv === undefined || rv === w.rv);
  if (w.mixed || w.rv === undefined || rv !== w.rv) return false;
  // A create, or an apply (or other write) made on no known version: it created the object.
  if (type === "added") return w.op === "create" || w.base === undefined;
  return w.base !== undefined && oldRv === w.base;
}

/** Whether the cache's view of the object shows the write. */
function inCache(
  w: OwnWrite,
  cached: KubeObject | undefined,
  watermark: string | undefined,
): boolean {
  if (w.op === "delete") {
    if (!cached) return true;
    if (w.uid && cached.metadata.uid && cached.metadata.uid !== w.uid) return true;
    return !!cached.metadata.deletionTimestamp && confirms(cached.metadata.resourceVersion, w.rv);
  }
  if (cached) {
    if (w.uid && cached.metadata.uid && cached.metadata.uid !== w.uid) return true;
    return w.rv === undefined || confirms(cached.metadata.resourceVersion, w.rv);
  }
  // Absent: not shown yet, or shown and deleted since by someone else (the cache is past it).
  return w.rv !== undefined && watermark !== undefined &&
    compareResourceVersions(watermark, w.rv) >= 0;
}

/** Remembers a controller's own last writes (see the module doc, "Not sending a write again"). */
export class LastWrites implements WriteMemory {
  readonly #applied = new Map<string, number>();
  readonly #status = new Map<string, { hash: number; rv: string }>();

  /**
   * Whether applying `desired` again would change nothing.
   *
   * @param key The owned object's identity (kind and object key).
   * @param desired The object about to be applied.
   * @param cached The owned object as the controller's cache holds it, if it does.
   * @returns True when the apply can be skipped.
   */
  applyUnchanged(key: string, desired: object, cached: object | undefined): boolean {
    const last = this.#applied.get(key);
    if (last === undefined || cached === undefined || last !== hashOf(desired)) return false;
    const { apiVersion: _a, kind: _k, ...fields } = desired as Record<string, unknown>;
    return contains(cached, fields);
  }

  /** Records a successful apply of `desired`. */
  recordApply(key: string, desired: object): void {
    this.#applied.set(key, hashOf(desired));
  }

  /** Forgets an owned object (it was deleted). */
  forgetApplied(key: string): void {
    this.#applied.delete(key);
  }

  /**
   * Whether `patch` is the status this controller last wrote for the primary and the cache
   * has not caught up with that write yet.
   *
   * @param key The primary's key.
   * @param patch The status merge patch about to be sent.
   * @param cachedRv The cached primary's resourceVersion.
   * @returns True when the patch can be skipped.
   */
  statusPending(key: string, patch: unknown, cachedRv: string | undefined): boolean {
    const last = this.#status.get(key);
    if (!last || cachedRv === undefined || last.hash !== hashOf(patch)) return false;
    return compareResourceVersions(cachedRv, last.rv) < 0;
  }

  /** Records a successful status write and the resourceVersion it returned. */
  recordStatus(key: string, patch: unknown, rv: string | undefined): void {
    if (rv === undefined) this.#status.delete(key);
    else this.#status.set(key, { hash: hashOf(patch), rv });
  }

  /** Forgets a primary (it was deleted). */
  forgetStatus(key: string): void {
    this.#status.delete(key);
  }

  /** Entries held, for tests. */
  get size(): number {
    return this.#applied.size + this.#status.size;
  }
}

/**
 * Whether `cached` holds every field of `desired` with the same value: maps may hold more
 * keys (server defaults, other managers' fields), lists must have the same length and each
 * element must hold its counterpart (defaults inside list elements).
 */
export function contains(cached: unknown, desired: unknown): boolean {
  if (desired === null || typeof desired !== "object") return Object.is(cached, desired);
  if (cached === null || typeof cached !== "object") return false;
  if (Array.isArray(desired)) {
    return Array.isArray(cached) && cached.length === desired.length &&
      desired.every((d, i) => contains(cached[i], d));
  }
  if (Array.isArray(cached)) return false;
  const c = cached as Record<string, unknown>;
  for (const [k, v] of Object.entries(desired)) {
    if (v === undefined) continue;
    if (!contains(c[k], v)) return false;
  }
  return true;
}

/** A 53-bit hash (cyrb53) of a value's JSON. */
export function hashOf(value: unknown): number {
  const s = JSON.stringify(value) ?? "";
  let h1 = 0xdeadbeef, h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
