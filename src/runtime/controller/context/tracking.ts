/**
 * How a reconcile context reports its own writes, and what it asks before making one: the
 * interfaces between the context and the controller's write gate
 * (`../pipeline/write_gate.ts`), which implements them. The context only reports and asks;
 * the gate decides what the reports mean for the queue.
 *
 * @module
 */
import type { KubeObject } from "../../../core/object.ts";
import type { Resource } from "../../../core/resource.ts";
import type { CacheListOptions } from "../../cache/reader.ts";

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

/** A write the server answered, as the context reports it to {@linkcode Tracking}. */
export interface TrackedWrite {
  readonly op: OwnWriteOp;
  readonly name: string;
  readonly namespace: string | undefined;
  /** The server's answer. */
  readonly answer: KubeObject | undefined;
  /** The resourceVersion the write was made on. */
  readonly base: string | undefined;
  /**
   * The answer shows more than this write changed (see `wroteOnly`): someone else's change
   * made after `base`, which the reconcile did not see; its event is news, not an echo.
   */
  readonly mixed?: boolean;
  readonly uid: string | undefined;
}

/** How a context reports its writes to the runner and shows them in `ctx.cache`. */
export interface Tracking {
  /**
   * Announces a write of a kind about to be sent (its echo may arrive before its answer);
   * the function returned is called once, when it settled, with the write as the server
   * answered it (kept when the cache will show it), or `undefined` when it failed or
   * changed nothing.
   */
  begin(res: Resource<any>): (write: TrackedWrite | undefined) => void;
  /** This primary's writes of a kind that the cache has not confirmed yet. */
  pending(res: Resource<any>): readonly OwnWrite[];
  /** Whether an object would be in `list(res, options)` of the cache. */
  matches(res: Resource<any>, obj: KubeObject, options: CacheListOptions): boolean;
}

/**
 * The controller's memory of its last writes, so that it does not send them again when they
 * come back as watch events: the last applied desired object per owned object, the last
 * status patch per primary.
 */
export interface WriteMemory {
  /**
   * Whether applying `desired` again would change nothing.
   *
   * @param key The owned object's identity (see `appliedKey`).
   * @param desired The object about to be applied.
   * @param cached The owned object as the controller's cache holds it, if it does.
   * @returns `true` when the apply can be skipped.
   */
  applyUnchanged(key: string, desired: object, cached: object | undefined): boolean;
  /** Records a successful apply of `desired`. */
  recordApply(key: string, desired: object): void;
  /**
   * Whether `patch` is the status this controller last wrote for the primary and the cache
   * has not caught up with that write yet.
   *
   * @param key The primary's key.
   * @param patch The status merge patch about to be sent.
   * @param cachedRv The cached primary's resourceVersion.
   * @returns `true` when the patch can be skipped.
   */
  statusPending(key: string, patch: unknown, cachedRv: string | undefined): boolean;
  /** Records a successful status write and the resourceVersion it returned. */
  recordStatus(key: string, patch: unknown, rv: string | undefined): void;
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
