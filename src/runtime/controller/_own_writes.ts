// A controller's writes that its cache has not shown yet, per primary: read-your-own-writes
// and create/delete expectations (client-go's ReplicaSet expectations, Kubernetes 1.36's
// KEP-5647 "skip until the informer caught up", Java Operator SDK's own-write cache).
//
// Every write made through a reconcile context records the resourceVersion the server
// returned. The next reconcile of that primary starts only once each recorded write is in
// the cache, judged with comparable resourceVersions (KEP-5504):
//
// - a write or create: the cached object's resourceVersion is at least the written one, or
//   the object is absent while the cache as a whole is past that version (someone else
//   deleted it since);
// - a delete: the object is gone from the cache (or the cache holds another object, a new
//   uid, of that name), or shows the deletion (its resourceVersion at least the one the
//   delete returned, `deletionTimestamp` set).
//
// Where resourceVersions are not comparable (an older or foreign server), a write is in the
// cache once a watch event carried exactly its resourceVersion (events arrive in order).
// A write the cache never shows within the bound expires: the runner logs it and goes on.
//
// A watch event that is exactly one of these writes — its new resourceVersion the written
// one, its old one the version the write was made on — is the write's echo: it starts no
// reconcile of the primary that wrote it (anything else changed in between gives another
// old version, and does). That holds only when the server made the answered version for
// this write. A patch or apply made on a stale cached version that changes nothing on the
// server answers the object as someone else left it (a deletion, a new spec), at their
// version; and a relist hands the cache that version with the stale one as its old state.
// So a write whose answer differs from the object it was made on anywhere the write did not
// set is marked `mixed` ({@linkcode wroteOnly}): its event is news, never an echo.
import type { KubeObject } from "../../core/object.ts";
import { compareResourceVersions } from "./_write_memory.ts";

/** What a recorded write did. */
export type OwnWriteOp = "write" | "create" | "delete";

/** One write made through a reconcile context. */
export interface OwnWrite {
  /** The object's kind: its `kindKey` as the full kind (full and metadata-only are one). */
  readonly kind: string;
  /** The object's key, `namespace/name` or `name`. */
  readonly key: string;
  readonly op: OwnWriteOp;
  /** The resourceVersion the server returned (none for a delete that returned a Status). */
  readonly rv: string | undefined;
  /** The resourceVersion the write was made on; none for a create. */
  readonly base: string | undefined;
  /**
   * The answer shows changes besides this write's (someone else's, made after the version
   * the write was made on): its event is never this write's echo.
   */
  readonly mixed?: boolean;
  /** The object's uid, when known. */
  readonly uid: string | undefined;
  /** The server's answer (frozen), what `ctx.cache` shows until the cache has it. */
  readonly object: KubeObject | undefined;
  /** Clock time of the write. */
  readonly at: number;
}

/** How a cache looks from the tracker: one object, and how far its informer has got. */
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

const SEP = "\u0001";
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

/**
 * What a write set: the body of a merge patch or an apply (the fields it names, each with
 * everything under it), or `"all"` for a replace.
 */
export type Wrote = object | "all";

// Set by the server on every write, or stripped by the cache: never a sign of another's change.
const SERVER_METADATA = new Set(["resourceVersion", "managedFields", "generation"]);

/**
 * Whether `answer` is `base` changed only where `wrote` set fields: then the server made the
 * answered version for this write alone, and its watch event is the write's echo. A field the
 * write did not name that differs — a `deletionTimestamp`, another's label, a new spec under a
 * status patch — means the answer also shows someone else's change the reconcile did not see.
 * Server-set metadata (`resourceVersion`, `generation`, `managedFields`) is not compared.
 *
 * @param base The object the write was made on, as the reconcile saw it.
 * @param answer The server's answer.
 * @param wrote The write's body (see {@linkcode Wrote}).
 * @returns `true` when nothing but the write explains the answer.
 */
export function wroteOnly(base: KubeObject, answer: KubeObject, wrote: Wrote): boolean {
  if (wrote === "all") return true;
  return sameOutside(base, answer, wrote, 0);
}

function sameOutside(a: unknown, b: unknown, wrote: unknown, depth: number): boolean {
  if (a === b) return true;
  // A field the write added or emptied: only what it named under it may differ.
  if (a === undefined && isRecord(b) && isRecord(wrote)) a = {};
  if (b === undefined && isRecord(a) && isRecord(wrote)) b = {};
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameOutside(a[i], b[i], undefined, -1)) return false;
    return true;
  }
  const covered = isRecord(wrote) ? wrote : undefined;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const check = (k: string): boolean => {
    if (depth === 1 && SERVER_METADATA.has(k)) return true;
    const w = covered?.[k];
    // A field the write set to a value (or removed, `null`) is the write's, with all below it.
    if (w !== undefined && (typeof w !== "object" || w === null || Array.isArray(w))) return true;
    return sameOutside(ra[k], rb[k], w, depth === 0 && k === "metadata" ? 1 : -1);
  };
  for (const k in ra) if (!check(k)) return false;
  for (const k in rb) if (!(k in ra) && !check(k)) return false;
  return true;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
