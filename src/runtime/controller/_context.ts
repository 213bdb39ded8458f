// The ReconcileContext a controller hands to reconcile/finalize: write helpers bound to the
// primary object and the controller's field manager. Every write goes through here so that
// the context always acts on the newest state it knows of the primary (its own earlier writes
// included), and so that the runner can wait for its cache to show these writes before the
// next reconcile of the primary (see `_own_writes.ts`).
import type { Logger } from "../../util/log.ts";
import type { Client } from "../../client/client.ts";
import type { ApplyObject, MergePatch } from "../../client/types.ts";
import { isConflict, isNotFound } from "../../client/api_error.ts";
import { type ConditionInput, setCondition } from "../../core/conditions.ts";
import type { EventRecorder } from "./events.ts";
import type { Condition, KubeObject, ObjectRef } from "../../core/object.ts";
import { setControllerReference } from "../../core/owner.ts";
import type {
  ClusterScope,
  ContextDeleteOptions,
  ContextWriteOptions,
  Controller,
  ReconcileContext,
  StatusOf,
} from "./reconcile.ts";
import type { Resource } from "../../core/resource.ts";
import type { CacheGetOptions, CacheListOptions, CacheReader } from "../cache/reader.ts";
import { objectKey } from "../../core/object_key.ts";
import { compareResourceVersions, type WriteMemory } from "./_write_memory.ts";
import { type OwnWrite, type OwnWriteOp, type Wrote, wroteOnly } from "./_own_writes.ts";
import { dataCopy } from "../../util/freeze.ts";

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

export interface ContextInit<T extends KubeObject> {
  controller: Controller<T>;
  client: Client;
  events: EventRecorder;
  log: Logger;
  key: string;
  /** The primary as reconcile gets it (a copy it may change). */
  primary: T;
  /** The primary as the server last showed it (the cached, frozen object). */
  cached: T;
  /** Reads from the controller's cache. */
  cache: CacheReader;
  /** The cluster a fleet runs this reconcile for (`ctx.cluster`); absent on one cluster. */
  cluster?: ClusterScope;
  /** `ctx.signal`: the attempt's; once it aborted, every write is refused unsent. */
  signal: AbortSignal;
  /** The controller's own last writes, to skip writing them again. */
  memory?: WriteMemory;
  /** Records writes for read-your-own-writes; without it nothing is tracked. */
  tracking?: Tracking;
  /** An owned object as the controller's cache holds it: key for `memory`, and the object. */
  owned?: (
    kind: Resource<any>,
    name: string,
    namespace: string | undefined,
  ) => { key: string; cached: KubeObject | undefined } | undefined;
}

/** A context and what the runner does through it besides reconcile: the finalizer writes. */
export interface ContextHandle<T extends KubeObject> {
  readonly ctx: ReconcileContext<T>;
  /**
   * Merge-patches the primary (e.g. its finalizers), computed from and guarded by the
   * newest state this context knows.
   */
  patchPrimary(patch: (latest: T) => MergePatch<T>): Promise<T>;
}

/**
 * The reconcile context of one reconcile.
 *
 * @param init The controller, client, primary and cache.
 * @returns The context.
 */
export function reconcileContext<T extends KubeObject>(
  init: ContextInit<T>,
): ReconcileContext<T> {
  return createContext(init).ctx;
}

/**
 * The reconcile context of one reconcile, and the runner's handle on it.
 *
 * @param init The controller, client, primary and cache.
 * @returns The context and its handle.
 */
export function createContext<T extends KubeObject>(init: ContextInit<T>): ContextHandle<T> {
  const { controller, client, key, signal, tracking } = init;
  const res = controller.resource;
  const fieldManager = controller.fieldManager;
  const m = init.primary.metadata;
  const owner: KubeObject = {
    ...init.primary,
    apiVersion: init.primary.apiVersion ?? res.apiVersion,
    kind: init.primary.kind ?? res.kind,
  };
  const ref: ObjectRef = {
    apiVersion: owner.apiVersion!,
    kind: owner.kind!,
    name: m.name!,
    ...(m.namespace ? { namespace: m.namespace } : {}),
    ...(m.uid ? { uid: m.uid } : {}),
  };
  const isPrimary = (
    kind: Resource<any>,
    obj: { metadata: { name?: string; namespace?: string } },
  ) =>
    sameKind(kind, res) &&
    objectKey({
        name: obj.metadata.name ?? "",
        namespace: res.namespaced ? obj.metadata.namespace ?? m.namespace : undefined,
      }) === key;
  // The newest state of the primary this context knows: the cached object, then what its
  // own writes returned. "Nothing changed" is judged against it — never against `obj`,
  // which the reconcile may have changed before asking for the same values to be written —
  // and every write of the primary is computed from and guarded by it.
  let latest: T = init.cached;
  // `ctx.cache`: with tracking, it shows this primary's own writes the cache has not yet.
  const cache = tracking ? new OwnWritesReader(init.cache, tracking, m.namespace) : init.cache;
  // The object a write is made on: what `ctx.cache` shows of it (the newest this context
  // knows, its own writes included); none when the kind is not cached here.
  const baseOf = (
    kind: Resource<any>,
    name: string,
    namespace: string | undefined,
  ): KubeObject | undefined => {
    if (isPrimary(kind, { metadata: { name, namespace } })) return latest;
    try {
      return cache.get(kind, name, { namespace });
    } catch {
      return undefined;
    }
  };
  // Sends one write and tells the runner about it: announced before it is sent, since its
  // echo may come back before its answer, and settled with the server's answer. A write of
  // the primary refused with 409 was computed from a state someone else has changed since:
  // the server's version is learned and recorded, so that the retry (after the work queue's
  // backoff) waits for the cache to show it instead of failing on the same stale state.
  // Nothing is sent once the signal aborted (the attempt ran past its `timeoutMs`, or the
  // shutdown gave up on it): the runner no longer waits for this attempt and may already run
  // the next one of this key, which a late write of this one would overwrite.
  // `wrote` is what the write sets (see `wroteOnly`), for telling its echo from news.
  const write = async <R extends KubeObject | undefined>(
    kind: Resource<any>,
    op: OwnWriteOp,
    target: { name: string; namespace: string | undefined; uid?: string },
    send: () => Promise<R>,
    wrote: Wrote = "all",
  ): Promise<R> => {
    signal.throwIfAborted();
    const primary = isPrimary(kind, { metadata: target });
    const baseObject = op === "write" ? baseOf(kind, target.name, target.namespace) : undefined;
    const base = baseObject?.metadata.resourceVersion;
    const settle = tracking?.begin(kind);
    let answer: R;
    try {
      answer = await send();
    } catch (err) {
      settle?.(undefined);
      if (primary && isConflict(err)) await learnServerState();
      throw err;
    }
    if (answer && op !== "delete" && primary) latest = answer as unknown as T;
    // A write that changed nothing returns the version it was made on: nothing to wait for.
    const noop = op === "write" && answer?.metadata.resourceVersion === base;
    // Made on a stale version, a write that changed nothing answers someone else's newer
    // version: not an echo to skip (see _own_writes.ts).
    const mixed = !noop && baseObject && answer && !wroteOnly(baseObject, answer, wrote);
    settle?.(
      noop ? undefined : {
        op,
        name: answer?.metadata.name ?? target.name,
        namespace: kind.namespaced ? answer?.metadata.namespace ?? target.namespace : undefined,
        answer,
        base,
        ...(mixed ? { mixed: true } : {}),
        uid: answer?.metadata.uid ?? target.uid,
      },
    );
    return answer;
  };
  const learnServerState = async () => {
    if (!tracking) return;
    try {
      const fresh = await client.get(res, m.name!, { namespace: m.namespace, signal });
      tracking.begin(res)({
        op: "write",
        name: m.name!,
        namespace: m.namespace,
        answer: fresh,
        base: undefined,
        uid: fresh.metadata.uid,
      });
    } catch {
      // The retry reads whatever the cache holds then.
    }
  };
  // An object this controller writes as the primary's: typed, in the primary's namespace
  // when it has none, the primary its controller owner.
  const owned = <
    O extends { apiVersion?: string; kind?: string; metadata: KubeObject["metadata"] },
  >(
    kind: Resource<any>,
    obj: O,
  ): O => {
    const desired = dataCopy(obj);
    desired.apiVersion ??= kind.apiVersion;
    desired.kind ??= kind.kind;
    if (kind.namespaced && !desired.metadata.namespace && m.namespace) {
      desired.metadata.namespace = m.namespace;
    }
    setControllerReference(owner, desired);
    return desired;
  };
  // The newer of two resourceVersions, `a` when they are not comparable.
  const newest = (a: string | undefined, b: string | undefined) =>
    a === undefined ? b : b !== undefined && compareResourceVersions(b, a) > 0 ? b : a;
  // A merge patch replaces lists whole: a list computed from an older state would drop what
  // others wrote since (a condition set by another controller). Such a patch carries the
  // resourceVersion it was computed from, so the server refuses it (409) instead, and the
  // reconcile is retried on fresh state.
  const writeStatus = async (
    obj: T,
    status: MergePatch<StatusOf<T>>,
    computedFrom: string | undefined,
  ): Promise<T> => {
    const mine = objectKey(obj) === key;
    const server = mine ? latest : undefined;
    if (server && isSubset(status, (server as { status?: unknown }).status)) return obj;
    // The cache may not have seen this controller's last status write yet: the same patch
    // again is that write's echo, not news.
    if (server && init.memory?.statusPending(key, status, server.metadata.resourceVersion)) {
      return obj;
    }
    const guard = computedFrom && hasList(status)
      ? { metadata: { resourceVersion: computedFrom } }
      : {};
    const target = { name: obj.metadata.name!, namespace: obj.metadata.namespace };
    const out = await write(res, "write", target, () =>
      client.patchStatus(
        res,
        target.name,
        { ...guard, status } as unknown as MergePatch<T>,
        { namespace: target.namespace, fieldManager, signal },
      ), { status });
    if (mine) init.memory?.recordStatus(key, status, out.metadata.resourceVersion);
    return out;
  };
  const patchStatus = (obj: T, status: MergePatch<StatusOf<T>>): Promise<T> =>
    writeStatus(
      obj,
      status,
      objectKey(obj) === key
        ? newest(obj.metadata.resourceVersion, latest.metadata.resourceVersion)
        : obj.metadata.resourceVersion,
    );
  const targetOf = (
    kind: Resource<any>,
    target: string | KubeObject,
    options: ContextWriteOptions | undefined,
  ) => {
    const name = typeof target === "string" ? target : target.metadata.name!;
    const namespace = kind.namespaced
      ? options?.namespace ??
        (typeof target === "string" ? undefined : target.metadata.namespace) ??
        m.namespace
      : undefined;
    return { name, namespace };
  };
  const ctx: ReconcileContext<T> = {
    client,
    cache,
    log: init.log,
    events: init.events,
    controller: controller.name,
    key,
    ref,
    signal,
    cluster: init.cluster?.name,
    hub: init.cluster?.hub,
    async apply<U extends KubeObject>(kind: Resource<U>, obj: ApplyObject<U>): Promise<U> {
      const desired = owned(kind, obj);
      const { name, namespace } = desired.metadata;
      // An owned object this controller applied just so, still holding those fields in the
      // cache: applying it again is the echo of its own write, and would change nothing.
      const mine = init.owned?.(kind, name, namespace);
      if (mine && init.memory?.applyUnchanged(mine.key, desired, mine.cached)) {
        return dataCopy(mine.cached) as U;
      }
      const out = await write(
        kind,
        "write",
        { name, namespace },
        () => client.apply(kind, desired, { force: true, fieldManager, signal }),
        desired,
      );
      if (mine) init.memory?.recordApply(mine.key, desired);
      return out;
    },
    create<U extends KubeObject>(kind: Resource<U>, obj: U): Promise<U> {
      const desired = owned(kind, obj);
      const target = { name: desired.metadata.name ?? "", namespace: desired.metadata.namespace };
      return write(
        kind,
        "create",
        target,
        () => client.create(kind, desired, { fieldManager, signal }),
      );
    },
    update<U extends KubeObject>(kind: Resource<U>, obj: U): Promise<U> {
      const target = targetOf(kind, obj, undefined);
      const body = dataCopy(obj);
      if (kind.namespaced) body.metadata.namespace = target.namespace;
      // The primary as the reconcile holds it may be older than this context's own last
      // write of it: that write's version, never a stale one.
      if (isPrimary(kind, obj)) {
        body.metadata.resourceVersion = newest(
          obj.metadata.resourceVersion,
          latest.metadata.resourceVersion,
        );
      }
      return write(
        kind,
        "write",
        target,
        () => client.replace(kind, body, { fieldManager, signal }),
      );
    },
    patch<U extends KubeObject>(
      kind: Resource<U>,
      target: string | U,
      patch: MergePatch<U>,
      options?: ContextWriteOptions,
    ): Promise<U> {
      const t = targetOf(kind, target, options);
      return write(
        kind,
        "write",
        t,
        () => client.patch(kind, t.name, patch, { namespace: t.namespace, fieldManager, signal }),
        patch,
      );
    },
    async delete<U extends KubeObject>(
      kind: Resource<U>,
      target: string | U,
      options?: ContextDeleteOptions,
    ): Promise<void> {
      const t = {
        ...targetOf(kind, target, options),
        uid: typeof target === "string" ? undefined : target.metadata.uid,
      };
      try {
        await write(kind, "delete", t, () =>
          client.delete(kind, t.name, {
            namespace: t.namespace,
            propagationPolicy: options?.propagationPolicy ?? "Background",
            signal,
          }));
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },
    patchStatus,
    setCondition(obj: T, condition: ConditionInput): Promise<T> {
      // From the latest state this context knows (its own earlier writes included), so that
      // consecutive calls keep each other's conditions; guarded by that state's version.
      const base = objectKey(obj) === key ? latest : obj;
      const current = (base as { status?: { conditions?: Condition[] } }).status?.conditions;
      const next = setCondition(current, {
        ...condition,
        observedGeneration: condition.observedGeneration ?? obj.metadata.generation,
      });
      return writeStatus(
        obj,
        { conditions: next } as unknown as MergePatch<StatusOf<T>>,
        base.metadata.resourceVersion,
      );
    },
  };
  return {
    ctx,
    async patchPrimary(make: (latest: T) => MergePatch<T>): Promise<T> {
      signal.throwIfAborted();
      const patch = make(latest);
      return await write(
        res,
        "write",
        { name: m.name!, namespace: m.namespace },
        () => client.patch(res, m.name!, patch, { namespace: m.namespace, fieldManager, signal }),
        patch,
      );
    },
  };
}

/**
 * `ctx.cache` while this primary has writes the cache has not shown: the cache, with the
 * objects this controller created or changed shown as the server answered, and the ones it
 * deleted left out.
 */
class OwnWritesReader implements CacheReader {
  readonly #inner: CacheReader;
  readonly #tracking: Tracking;
  readonly #namespace: string | undefined;

  constructor(inner: CacheReader, tracking: Tracking, namespace: string | undefined) {
    this.#inner = inner;
    this.#tracking = tracking;
    this.#namespace = namespace;
  }

  get<U extends KubeObject>(
    res: Resource<U>,
    name: string,
    options: CacheGetOptions = {},
  ): U | undefined {
    const cached = this.#inner.get(res, name, options);
    const pending = this.#tracking.pending(res);
    if (!pending.length) return cached;
    const ns = res.namespaced ? options.namespace ?? this.#namespace : undefined;
    const key = objectKey({ name, namespace: ns });
    const w = pending.find((w) => w.key === key);
    return w ? shown(cached, w) as U | undefined : cached;
  }

  list<U extends KubeObject>(res: Resource<U>, options: CacheListOptions = {}): U[] {
    const cached = this.#inner.list(res, options);
    const pending = this.#tracking.pending(res);
    if (!pending.length) return cached;
    const byKey = new Map<string, U>(cached.map((o) => [objectKey(o), o]));
    for (const w of pending) {
      const held = byKey.get(w.key);
      const obj = shown(held, w) as U | undefined;
      if (obj === held) continue;
      if (obj && this.#tracking.matches(res, obj, options)) byKey.set(w.key, obj);
      else byKey.delete(w.key);
    }
    return [...byKey.values()];
  }
}

/** What the cache would show of an object after the write `w`. */
function shown(cached: KubeObject | undefined, w: OwnWrite): KubeObject | undefined {
  const rv = cached?.metadata.resourceVersion;
  if (cached && w.rv && rv && (rv === w.rv || compareResourceVersions(rv, w.rv) > 0)) {
    return cached;
  }
  if (cached && w.uid && cached.metadata.uid && cached.metadata.uid !== w.uid) return cached;
  if (w.op === "delete") return w.object?.metadata.deletionTimestamp ? w.object : undefined;
  return w.object ?? cached;
}

function sameKind(a: Resource<any>, b: Resource<any>): boolean {
  return a.apiVersion === b.apiVersion && a.kind === b.kind;
}

/** Whether a merge patch holds a list anywhere (lists are replaced whole). */
function hasList(patch: unknown): boolean {
  if (Array.isArray(patch)) return true;
  if (typeof patch !== "object" || patch === null) return false;
  return Object.values(patch).some(hasList);
}

/** Whether applying merge patch `patch` to `target` would change nothing. */
export function isSubset(patch: unknown, target: unknown): boolean {
  if (patch === null) return target === undefined || target === null;
  if (typeof patch !== "object" || Array.isArray(patch)) return deepEqual(patch, target);
  if (typeof target !== "object" || target === null || Array.isArray(target)) return false;
  const t = target as Record<string, unknown>;
  return Object.entries(patch as Record<string, unknown>).every(([k, v]) =>
    v === undefined || isSubset(v, t[k])
  );
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  if (ak.length !== bk.length) return false;
  return ak.every((k) =>
    deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])
  );
}
