/**
 * The writes of one reconcile: `ctx.apply`, `create`, `update`, `patch`, `delete`, and the
 * finalizer's patches of the primary. Every write goes through {@linkcode ContextWrites.send}
 * so that the context always acts on the newest state it knows of the primary (its own
 * earlier writes included), and so that the write gate can wait for the cache to show these
 * writes before the next reconcile of the primary (`../pipeline/write_gate.ts`).
 *
 * @module
 */
import { isConflict, isNotFound } from "../../../client/api_error.ts";
import type { Client } from "../../../client/client.ts";
import type { ApplyObject, MergePatch } from "../../../client/types.ts";
import { compareResourceVersions, type KubeObject } from "../../../core/object.ts";
import { objectKey } from "../../../core/object_key.ts";
import { setControllerReference } from "../../../core/owner.ts";
import type { Resource } from "../../../core/resource.ts";
import { dataCopy } from "../../../util/freeze.ts";
import type { CacheReader } from "../../cache/reader.ts";
import type { ContextDeleteOptions, ContextWriteOptions, Controller } from "../reconcile.ts";
import {
  type OwnWriteOp,
  type Tracking,
  type WriteMemory,
  type Wrote,
  wroteOnly,
} from "./tracking.ts";

/** What the writes of one reconcile are made with. */
export interface WritesInit<T extends KubeObject> {
  readonly controller: Controller<T>;
  readonly client: Client;
  /** The primary's key. */
  readonly key: string;
  /** The primary as reconcile gets it (a copy it may change). */
  readonly primary: T;
  /** The primary as the server last showed it (the cached, frozen object). */
  readonly cached: T;
  /** `ctx.cache`: what a write is made on, for an object that is not the primary. */
  readonly cache: CacheReader;
  /** Once it aborted, every write is refused unsent. */
  readonly signal: AbortSignal;
  /** The controller's own last writes, to skip writing them again. */
  readonly memory?: WriteMemory;
  /** Records writes for read-your-own-writes; without it nothing is tracked. */
  readonly tracking?: Tracking;
  /** An owned object as the controller's cache holds it: key for `memory`, and the object. */
  readonly owned?: (
    kind: Resource<any>,
    name: string,
    namespace: string | undefined,
  ) => { key: string; cached: KubeObject | undefined } | undefined;
}

/** Where a write goes. */
export interface WriteTarget {
  readonly name: string;
  readonly namespace: string | undefined;
  readonly uid?: string;
}

/**
 * The newer of two resourceVersions, `a` when they are not comparable.
 *
 * @param a One resourceVersion.
 * @param b The other.
 * @returns The newer.
 */
export function newest(a: string | undefined, b: string | undefined): string | undefined {
  return a === undefined ? b : b !== undefined && compareResourceVersions(b, a) > 0 ? b : a;
}

/**
 * The writes of one reconcile, and the newest state of its primary they know.
 *
 * @typeParam T The primary object type.
 */
export class ContextWrites<T extends KubeObject> {
  readonly #init: WritesInit<T>;
  readonly #owner: KubeObject;
  // The newest state of the primary this context knows: the cached object, then what its
  // own writes returned. "Nothing changed" is judged against it — never against `obj`,
  // which the reconcile may have changed before asking for the same values to be written —
  // and every write of the primary is computed from and guarded by it.
  #latest: T;

  /** @param init The controller, client, primary, cache and tracking. */
  constructor(init: WritesInit<T>) {
    this.#init = init;
    this.#latest = init.cached;
    const res = init.controller.resource;
    this.#owner = {
      ...init.primary,
      apiVersion: init.primary.apiVersion ?? res.apiVersion,
      kind: init.primary.kind ?? res.kind,
    };
  }

  /**
   * The newest state of the primary this context knows.
   *
   * @returns It (frozen when it is the cached one).
   */
  get latest(): T {
    return this.#latest;
  }

  /**
   * The primary kind.
   *
   * @returns It.
   */
  get resource(): Resource<T> {
    return this.#init.controller.resource;
  }

  /**
   * The primary as an owner: its apiVersion and kind always set.
   *
   * @returns It.
   */
  get owner(): KubeObject {
    return this.#owner;
  }

  /**
   * Whether an object of `kind` is this context's primary.
   *
   * @param kind Its kind.
   * @param obj Its name and namespace (the primary's namespace when it has none).
   * @returns `true` when it is.
   */
  isPrimary(
    kind: Resource<any>,
    obj: { metadata: { name?: string; namespace?: string } },
  ): boolean {
    const res = this.#init.controller.resource;
    if (kind.apiVersion !== res.apiVersion || kind.kind !== res.kind) return false;
    const namespace = res.namespaced
      ? obj.metadata.namespace ?? this.#init.primary.metadata.namespace
      : undefined;
    return objectKey({ name: obj.metadata.name ?? "", namespace }) === this.#init.key;
  }

  /**
   * Sends one write and tells the write gate about it: announced before it is sent, since its
   * echo may come back before its answer, and settled with the server's answer. A write of
   * the primary refused with 409 was computed from a state someone else has changed since:
   * the server's version is learned and recorded, so that the retry (after the work queue's
   * backoff) waits for the cache to show it instead of failing on the same stale state.
   * Nothing is sent once the signal aborted (the attempt ran past its `timeoutMs`, or the
   * shutdown gave up on it): the runner no longer waits for this attempt and may already run
   * the next one of this key, which a late write of this one would overwrite.
   *
   * @param kind The object's kind.
   * @param op What the write does.
   * @param target Where it goes.
   * @param send Sends it.
   * @param wrote What it sets (see `wroteOnly`), for telling its echo from news.
   * @returns The server's answer.
   */
  async send<R extends KubeObject | undefined>(
    kind: Resource<any>,
    op: OwnWriteOp,
    target: WriteTarget,
    send: () => Promise<R>,
    wrote: Wrote = "all",
  ): Promise<R> {
    this.#init.signal.throwIfAborted();
    const primary = this.isPrimary(kind, { metadata: target });
    const baseObject = op === "write" ? this.#baseOf(kind, target) : undefined;
    const base = baseObject?.metadata.resourceVersion;
    const settle = this.#init.tracking?.begin(kind);
    let answer: R;
    try {
      answer = await send();
    } catch (err) {
      settle?.(undefined);
      if (primary && isConflict(err)) await this.#learnServerState();
      throw err;
    }
    if (answer && op !== "delete" && primary) this.#latest = answer as unknown as T;
    // A write that changed nothing returns the version it was made on: nothing to wait for.
    const noop = op === "write" && answer?.metadata.resourceVersion === base;
    // Made on a stale version, a write that changed nothing answers someone else's newer
    // version: not an echo to skip (see the write gate).
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
  }

  /**
   * Merge-patches the primary (the finalizer's add and removal), computed from and guarded by
   * the newest state this context knows.
   *
   * @param make The patch, from the newest state.
   * @returns The server's answer.
   */
  async patchPrimary(make: (latest: T) => MergePatch<T>): Promise<T> {
    const { client, controller, signal, primary } = this.#init;
    signal.throwIfAborted();
    const res = controller.resource;
    const { name, namespace } = primary.metadata;
    const patch = make(this.#latest);
    const fieldManager = controller.fieldManager;
    return await this.send(
      res,
      "write",
      { name: name!, namespace },
      () => client.patch(res, name!, patch, { namespace, fieldManager, signal }),
      patch,
    );
  }

  /**
   * Where a write to `target` goes: its name, and its namespace (the option, the object's,
   * or the primary's).
   *
   * @param kind The kind.
   * @param target The object or its name.
   * @param options Its namespace.
   * @returns The target.
   */
  targetOf(
    kind: Resource<any>,
    target: string | KubeObject,
    options: ContextWriteOptions | undefined,
  ): WriteTarget {
    const name = typeof target === "string" ? target : target.metadata.name!;
    const namespace = kind.namespaced
      ? options?.namespace ??
        (typeof target === "string" ? undefined : target.metadata.namespace) ??
        this.#init.primary.metadata.namespace
      : undefined;
    return { name, namespace };
  }

  /**
   * An object this controller writes as the primary's: typed, in the primary's namespace
   * when it has none, the primary its controller owner.
   *
   * @param kind Its kind.
   * @param obj The object as the reconcile gave it (not changed).
   * @returns The copy to send.
   */
  ownedCopy<O extends { apiVersion?: string; kind?: string; metadata: KubeObject["metadata"] }>(
    kind: Resource<any>,
    obj: O,
  ): O {
    const desired = dataCopy(obj);
    desired.apiVersion ??= kind.apiVersion;
    desired.kind ??= kind.kind;
    const namespace = this.#init.primary.metadata.namespace;
    if (kind.namespaced && !desired.metadata.namespace && namespace) {
      desired.metadata.namespace = namespace;
    }
    setControllerReference(this.#owner, desired);
    return desired;
  }

  /**
   * The object a write is made on: what `ctx.cache` shows of it (the newest this context
   * knows, its own writes included); none when the kind is not cached here.
   */
  #baseOf(kind: Resource<any>, target: WriteTarget): KubeObject | undefined {
    if (this.isPrimary(kind, { metadata: target })) return this.#latest;
    try {
      return this.#init.cache.get(kind, target.name, { namespace: target.namespace });
    } catch {
      return undefined;
    }
  }

  async #learnServerState(): Promise<void> {
    const { client, controller, tracking, primary, signal } = this.#init;
    if (!tracking) return;
    const res = controller.resource;
    const { name, namespace } = primary.metadata;
    try {
      const fresh = await client.get(res, name!, { namespace, signal });
      tracking.begin(res)({
        op: "write",
        name: name!,
        namespace,
        answer: fresh,
        base: undefined,
        uid: fresh.metadata.uid,
      });
    } catch {
      // The retry reads whatever the cache holds then.
    }
  }
}

/**
 * The object writes of one reconcile — `ctx.apply`, `create`, `update`, `patch`, `delete` —
 * each sent through the context's writes (announced, tracked, refused once the signal
 * aborted) with the controller's field manager.
 *
 * @typeParam T The primary object type.
 */
export class ObjectWrites<T extends KubeObject> {
  readonly #w: ContextWrites<T>;
  readonly #init: WritesInit<T>;

  /**
   * @param w The context's writes.
   * @param init What they are made with.
   */
  constructor(w: ContextWrites<T>, init: WritesInit<T>) {
    this.#w = w;
    this.#init = init;
  }

  /**
   * `ctx.apply`: server-side apply of an owned object, skipped when it is the controller's
   * own last apply and the cache still holds it so.
   *
   * @param kind The kind.
   * @param obj The desired object.
   * @returns The object as the server (or, skipped, the cache) holds it.
   */
  async apply<U extends KubeObject>(kind: Resource<U>, obj: ApplyObject<U>): Promise<U> {
    const { client, controller, signal, memory } = this.#init;
    const desired = this.#w.ownedCopy(kind, obj);
    const { name, namespace } = desired.metadata;
    // An owned object this controller applied just so, still holding those fields in the
    // cache: applying it again is the echo of its own write, and would change nothing.
    const mine = this.#init.owned?.(kind, name, namespace);
    if (mine && memory?.applyUnchanged(mine.key, desired, mine.cached)) {
      return dataCopy(mine.cached) as U;
    }
    const fieldManager = controller.fieldManager;
    const out = await this.#w.send(
      kind,
      "write",
      { name, namespace },
      () => client.apply(kind, desired, { force: true, fieldManager, signal }),
      desired,
    );
    if (mine) memory?.recordApply(mine.key, desired);
    return out;
  }

  /**
   * `ctx.create`.
   *
   * @param kind The kind.
   * @param obj The object, owned by the primary.
   * @returns The created object.
   */
  create<U extends KubeObject>(kind: Resource<U>, obj: U): Promise<U> {
    const { client, controller, signal } = this.#init;
    const desired = this.#w.ownedCopy(kind, obj);
    const target = { name: desired.metadata.name ?? "", namespace: desired.metadata.namespace };
    const fieldManager = controller.fieldManager;
    return this.#w.send(
      kind,
      "create",
      target,
      () => client.create(kind, desired, { fieldManager, signal }),
    );
  }

  /**
   * `ctx.update`: a replace, of the primary at the newest version this context knows.
   *
   * @param kind The kind.
   * @param obj The whole object.
   * @returns The server's answer.
   */
  update<U extends KubeObject>(kind: Resource<U>, obj: U): Promise<U> {
    const { client, controller, signal } = this.#init;
    const target = this.#w.targetOf(kind, obj, undefined);
    const body = dataCopy(obj);
    if (kind.namespaced) body.metadata.namespace = target.namespace;
    // The primary as the reconcile holds it may be older than this context's own last
    // write of it: that write's version, never a stale one.
    if (this.#w.isPrimary(kind, obj)) {
      body.metadata.resourceVersion = newest(
        obj.metadata.resourceVersion,
        this.#w.latest.metadata.resourceVersion,
      );
    }
    const fieldManager = controller.fieldManager;
    return this.#w.send(
      kind,
      "write",
      target,
      () => client.replace(kind, body, { fieldManager, signal }),
    );
  }

  /**
   * `ctx.patch`: a merge patch.
   *
   * @param kind The kind.
   * @param target The object or its name.
   * @param patch The merge patch.
   * @param options Its namespace.
   * @returns The server's answer.
   */
  patch<U extends KubeObject>(
    kind: Resource<U>,
    target: string | U,
    patch: MergePatch<U>,
    options?: ContextWriteOptions,
  ): Promise<U> {
    const { client, controller, signal } = this.#init;
    const t = this.#w.targetOf(kind, target, options);
    const fieldManager = controller.fieldManager;
    return this.#w.send(
      kind,
      "write",
      t,
      () => client.patch(kind, t.name, patch, { namespace: t.namespace, fieldManager, signal }),
      patch,
    );
  }

  /**
   * `ctx.delete`: gone already is done.
   *
   * @param kind The kind.
   * @param target The object or its name.
   * @param options Its namespace and propagation policy.
   */
  async delete<U extends KubeObject>(
    kind: Resource<U>,
    target: string | U,
    options?: ContextDeleteOptions,
  ): Promise<void> {
    const { client, signal } = this.#init;
    const t = {
      ...this.#w.targetOf(kind, target, options),
      uid: typeof target === "string" ? undefined : target.metadata.uid,
    };
    try {
      await this.#w.send(kind, "delete", t, () =>
        client.delete(kind, t.name, {
          namespace: t.namespace,
          propagationPolicy: options?.propagationPolicy ?? "Background",
          signal,
        }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
