/**
 * The one door every write of a reconcile leaves through — `ctx.apply`, `create`, `update`,
 * `patch`, `delete`, `patchStatus`, `setCondition` and the finalizer's patches of the primary
 * alike — so that the context always acts on the newest state it knows of the primary (its own
 * earlier writes included), refuses every write once the attempt's signal aborted, and tells the
 * write gate about each write, so that the gate can wait for the cache to show it before the
 * next reconcile of the primary (`../pipeline/write_gate.ts`).
 *
 * @module
 */
import { isConflict } from "../../../client/errors/api_error.ts";
import type { Client } from "../../../client/client.ts";
import { compareResourceVersions, type KubeObject } from "../../../core/object.ts";
import { objectKey } from "../../../core/object_key.ts";
import { setControllerReference } from "../../../core/owner.ts";
import type { Resource } from "../../../core/resource.ts";
import { dataCopy } from "../../../util/freeze.ts";
import type { CacheReader } from "../../cache/reader.ts";
import type { ContextWriteOptions, Controller } from "../reconcile.ts";
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
 * The door of one reconcile's writes, and the newest state of its primary they know.
 *
 * @typeParam T The primary object type.
 */
export class Sender<T extends KubeObject> {
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
