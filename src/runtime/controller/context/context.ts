/**
 * The `ReconcileContext` a worker hands to one reconcile (or finalize), assembled from what it
 * gives: reads (`reads.ts`: `ctx.cache` with the reconcile's own writes shown), writes
 * (`writes.ts`: apply, create, update, patch, delete; `status.ts`: patchStatus), conditions
 * (`conditions.ts`: setCondition) — on the primary merged and written once per reconcile
 * (`status_buffer.ts`) —, the finalizer's patches of the primary (`finalizers.ts`),
 * and the controller's Event recorder, handed on as it is. Every write is bound to the primary
 * and the controller's field manager, and leaves through one door (`send.ts`): refused once
 * the attempt's signal aborted, and reported to the write gate through `tracking.ts`.
 *
 * @module
 */
import { firstLine } from "../../../util/cli_io.ts";
import type { Logger } from "../../../util/log.ts";
import type { Client } from "../../../client/client.ts";
import type { MergePatch } from "../../../client/types.ts";
import type { KubeObject, ObjectRef } from "../../../core/object.ts";
import type { Resource } from "../../../core/resource.ts";
import type { CacheReader } from "../../cache/reader.ts";
import type { EventRecorder } from "../events.ts";
import type { Controller, ReconcileContext } from "../reconcile.ts";
import { writeCondition } from "./conditions.ts";
import { patchPrimary } from "./finalizers.ts";
import { contextCache } from "./reads.ts";
import { Sender } from "./send.ts";
import { patchStatus, type StatusInit } from "./status.ts";
import { StatusBuffer } from "./status_buffer.ts";
import type { Tracking, WriteMemory } from "./tracking.ts";
import { ObjectWrites } from "./writes.ts";

/** What one reconcile's context is made of. */
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
  /** The name of the cluster a fleet runs this reconcile for (`ctx.cluster`); absent on one. */
  cluster?: string;
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

/** A context and what the worker does through it besides reconcile: the finalizer writes. */
export interface ContextHandle<T extends KubeObject> {
  readonly ctx: ReconcileContext<T>;
  /**
   * Merge-patches the primary (e.g. its finalizers), computed from and guarded by the
   * newest state this context knows.
   */
  patchPrimary(patch: (latest: T) => MergePatch<T>): Promise<T>;
  /**
   * Runs the reconcile (or finalize), then writes the status it set, once: when it returns,
   * with `observedGeneration` under it when given; when it throws, without, and rethrows.
   *
   * @param fn The reconcile or finalize.
   * @param observedGeneration The generation of the object it read, to write as
   * `status.observedGeneration` once it returned; none for a finalize or an opt-out.
   * @returns What `fn` returned.
   */
  finish<R>(fn: () => R | Promise<R>, observedGeneration?: number): Promise<R>;
}

/**
 * The reconcile context of one reconcile, and the worker's handle on it.
 *
 * @param init The controller, client, primary and cache.
 * @returns The context and its handle.
 */
export function createContext<T extends KubeObject>(init: ContextInit<T>): ContextHandle<T> {
  const { controller, client, key, signal } = init;
  const m = init.primary.metadata;
  const cache = contextCache(init.cache, init.tracking, m.namespace);
  const sender = new Sender<T>({ ...init, cache });
  const objects = new ObjectWrites<T>(sender, { ...init, cache });
  const status: StatusInit<T> = {
    client,
    key,
    fieldManager: controller.fieldManager,
    signal,
    memory: init.memory,
    sender,
  };
  const buffer = new StatusBuffer<T>(status);
  const isPrimary = (obj: T) => sender.isPrimary(controller.resource, obj);
  const ref: ObjectRef = {
    apiVersion: sender.owner.apiVersion!,
    kind: sender.owner.kind!,
    name: m.name!,
    ...(m.namespace ? { namespace: m.namespace } : {}),
    ...(m.uid ? { uid: m.uid } : {}),
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
    cluster: init.cluster,
    apply: (kind, obj) => objects.apply(kind, obj),
    create: (kind, obj) => objects.create(kind, obj),
    update: (kind, obj) => objects.update(kind, obj),
    patch: (kind, target, patch, options) => objects.patch(kind, target, patch, options),
    delete: (kind, target, options) => objects.delete(kind, target, options),
    patchStatus: (obj, patch) =>
      isPrimary(obj)
        ? refusedOr(signal, () => buffer.patch(obj, patch))
        : patchStatus(status, obj, patch),
    setCondition: (obj, condition) =>
      isPrimary(obj)
        ? refusedOr(signal, () => buffer.setCondition(obj, condition))
        : writeCondition(status, obj, condition),
    flushStatus: () => refusedOr(signal, () => buffer.flush()),
  };
  return {
    ctx,
    patchPrimary: (make) => patchPrimary(sender, init, make),
    finish: (fn, observedGeneration) => finish(buffer, init.log, fn, observedGeneration),
  };
}

/** A promise of `make()`, or rejected with the signal's reason once it aborted. */
function refusedOr<R>(signal: AbortSignal, make: () => R | Promise<R>): Promise<R> {
  try {
    signal.throwIfAborted();
    return Promise.resolve(make());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** {@linkcode ContextHandle.finish}. */
async function finish<T extends KubeObject, R>(
  buffer: StatusBuffer<T>,
  log: Logger,
  fn: () => R | Promise<R>,
  observedGeneration: number | undefined,
): Promise<R> {
  let result: R;
  try {
    result = await fn();
  } catch (err) {
    // What it set before it threw is what it meant to report (e.g. the dependent that
    // failed): written, but the reconcile's error is what settles the attempt.
    await buffer.flush().catch((cause) =>
      log.warn("The status set before the reconcile failed was not written: {cause}", {
        cause: firstLine(cause),
      })
    );
    throw err;
  }
  await buffer.flush(
    undefined,
    observedGeneration === undefined ? undefined : { observedGeneration },
  );
  return result;
}
