/**
 * `reconcile(resource, {...})`: describe a level-based controller. The value it returns is a
 * description, not a running thing: the manager (`createManager`) runs it on shared informers,
 * and the operator CLI derives RBAC from its `resource`, `owns`, `watches`, `reads` and
 * `finalizer`.
 *
 * Reads come from the cache, writes go to the API server: every kind the controller names
 * (its primary, `owns`, `watches`, `reads`) is cached, scoped as declared, and `ctx.cache`
 * and map functions read it without a request. `ctx.client` stays for uncached reads.
 *
 * ## The declaration
 *
 * Besides `name`, `reconcile` and the finalizer, the options come in groups:
 *
 * - `primary`: which primaries are cached, their `indexes`, which of their events count
 *   (`predicates`);
 * - `owns`: children whose events reconcile their controller owner — kinds,
 *   `metadataOnly(kind)`, `{ resource, ... }`, `dependents(...)` graphs;
 * - `watches`: other kinds mapped to primaries — `{ resource, map }`, `watchesFrom(fn)`;
 * - `reads`: kinds read from the cache, never a cause;
 * - `sources`: what is not an informer — external sources (`reconcileOn`, `reconcileAllOn`)
 *   that queue keys, timers (`every`) and daemons (`daemon`) that run beside reconciles;
 * - `run`: how it runs — `maxConcurrent`, `reservedWorkers`, `timeoutMs`, `fieldManager`;
 * - `retry` and `onError`: what a failed attempt leads to — its backoff, the maximum of
 *   attempts, and the status it writes.
 *
 * What causes a reconcile is an event of the primary, of an `owns` or a `watches` kind, an
 * item of an external source, or a `requeue(ms)` (the `Cause` of a queued key, in metrics).
 *
 * ## Flow
 *
 * A change to a primary object, to an object it owns (its controller ownerReference points
 * at the primary) or to a watched object (mapped to primary keys) puts the primary's key in
 * a work queue. A worker takes the key, reads the primary from the cache and calls
 * `reconcile(obj, ctx)`. With a `finalizer`, the finalizer is added first, and once
 * `deletionTimestamp` is set `finalize(obj, ctx)` runs instead, and the finalizer is removed
 * after it succeeds.
 *
 * ## Guarantees
 *
 * - Level-based: reconcile gets the current state, never the event; several changes may
 *   lead to one call.
 * - One call per key at a time; different keys run in parallel up to `run.maxConcurrent`.
 * - Objects that no longer exist are not reconciled.
 * - `reconcile` gets its own copy of the primary (mutating it changes nothing else); what
 *   `ctx.cache` and map functions return is frozen, so no reconcile can corrupt the cache.
 * - Consistency after own writes: every write through the context records the
 *   resourceVersion the server returned, and the next reconcile of the primary starts only
 *   once the cache shows it (bounded, 5 s by default). Within a reconcile, `ctx.cache` shows
 *   what `ctx.create`, `ctx.apply`, `ctx.update`, `ctx.patch` and `ctx.delete` did at once.
 *   Status writes, conditions and the finalizer's add and removal use the newest state the
 *   context knows, its own earlier writes included. The watch event of an own write (its
 *   echo) starts no reconcile.
 * - One status write per reconcile: what `ctx.patchStatus` and `ctx.setCondition` set on the
 *   primary is merged and written in one patch when `reconcile` or `finalize` returns or
 *   throws (earlier at `ctx.flushStatus()`), so no reader sees half of it; after a reconcile
 *   that returned, with `status.observedGeneration` when the status schema has it (option
 *   `observedGeneration`).
 * - Returning `undefined` ends the work for this change; `requeue(ms)` runs it again after
 *   `ms`; a thrown error runs it again after the work queue's per-key exponential backoff
 *   (`retry`: 5 ms doubling to 1,000,000 ms by default); a thrown {@linkcode TerminalError}
 *   is not retried (it is logged and recorded as a Warning Event on the object).
 * - With `retry.maxAttempts`, a key that failed that many times in a row is not retried
 *   until its object changes again: a `RetriesExhausted` Warning Event names the attempts
 *   and the last error, and a status with `conditions` gets `Ready=False`, reason
 *   `RetriesExhausted` (`retry.ts`; controller-runtime has no maximum, Java Operator SDK's
 *   `@GradualRetry(maxAttempts)` does).
 * - With `onError`, the status it returns is written once after each failed attempt, before
 *   the retry (or its absence) is scheduled as without it — Java Operator SDK's
 *   `updateErrorStatus`.
 * - With `run.timeoutMs`, no reconcile holds a worker longer than that: past it, `ctx.signal`
 *   aborts, the context sends no more writes, and the key is retried after its backoff
 *   while the worker serves other keys. The abandoned call may still be running when the
 *   retry starts (a promise cannot be stopped from outside); since it can no longer write
 *   through `ctx`, the retry is still the only one acting for the key.
 *
 * @module
 */
import type { ExternalSource } from "../source/external.ts";
import type { Daemon, Timer } from "../source/timers.ts";
import type { Logger } from "../../util/log.ts";
import type { Client } from "../../client/client.ts";
import type { ApplyObject, MergePatch } from "../../client/types.ts";
import type { ConditionInput } from "../../core/conditions.ts";
import type { EventRecorder } from "./events.ts";
import type { KubeObject, ObjectRef } from "../../core/object.ts";
import type { Predicate } from "./predicates.ts";
import type { Resource } from "../../core/resource.ts";
import type { ObjectName } from "../../core/object_key.ts";
import type { IndexFunc } from "../cache/store.ts";
import type { CacheReader } from "../cache/reader.ts";
import { kindKey } from "../../core/kind_key.ts";
import {
  type CachedKind,
  cachedKinds,
  type CacheScope,
  type CacheSpec,
  cacheSpecOf,
} from "./caches.ts";
import { KubenoError } from "../../util/error.ts";
import { type RetryInfo, type RetryOptions, type RetryPolicy, retryPolicyOf } from "./retry.ts";
import type { CustomResourceDefinitionSpec } from "../../core/crd.ts";

/** What `requeue(ms)` returns: run the reconcile for this object again after `afterMs`. */
export interface Requeue {
  /** Milliseconds to wait before the next reconcile of the object. */
  readonly requeueAfterMs: number;
  /** Its priority in the work queue; absent: low, behind real changes. */
  readonly priority?: number;
}

/** Options of {@linkcode requeue}. */
export interface RequeueOptions {
  /**
   * The key's priority in the work queue once the delay passed: higher is served first.
   * Nothing changed, so by default it waits behind keys from real changes, as an
   * unchanged requeue does with controller-runtime's priority queue.
   * @default LOW_PRIORITY (-100)
   */
  priority?: number;
}

/** What a reconcile or finalize function returns: `undefined` (done) or {@linkcode Requeue}. */
export type ReconcileResult = Requeue | undefined | void;

/**
 * Asks for the object to be reconciled again after `ms` milliseconds, e.g. to poll
 * something the cluster does not notify about. A change to the object meanwhile still
 * causes a reconcile at once.
 *
 * @param ms The delay in milliseconds, `0` or more.
 * @param options `priority`: the key's priority once the delay passed.
 * @returns The result to return from `reconcile`.
 * @throws {RangeError} When `ms` is negative or `priority` not finite.
 *
 * @example Poll every five seconds until ready
 * ```ts
 * import { requeue } from "./reconcile.ts";
 * const ready = false;
 * const result = ready ? undefined : requeue(5_000);
 * if (result?.requeueAfterMs !== 5_000) throw new Error();
 * ```
 *
 * @example Check again soon, ahead of the start-up storm
 * ```ts
 * import { requeue } from "./reconcile.ts";
 * const result = requeue(1_000, { priority: 10 });
 * if (result.priority !== 10) throw new Error();
 * ```
 */
export function requeue(ms: number, options: RequeueOptions = {}): Requeue {
  if (!(Number.isFinite(ms) && ms >= 0)) {
    throw new RangeError(`Cannot requeue: ms must be a finite number >= 0, got "${ms}"`);
  }
  const { priority } = options;
  if (priority === undefined) return Object.freeze({ requeueAfterMs: ms });
  if (!Number.isFinite(priority)) {
    throw new RangeError(`Cannot requeue: priority must be a finite number, got "${priority}"`);
  }
  return Object.freeze({ requeueAfterMs: ms, priority });
}

/**
 * An error that retrying cannot fix (invalid spec, missing permission the operator will
 * never get). Thrown from `reconcile` or `finalize`, it is logged and recorded as a Warning
 * Event on the object, and the object is not retried until it changes again.
 *
 * @example Refusing an invalid spec
 * ```ts
 * import { TerminalError } from "./reconcile.ts";
 * const err = new TerminalError('Cannot deploy image "": image is empty');
 * if (err.name !== "TerminalError" || !(err instanceof Error)) throw new Error();
 * ```
 */
export class TerminalError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message One line naming what failed and why.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TerminalError";
  }
}

/**
 * What reconcile and finalize functions get besides the object: a client, a logger, an event
 * recorder and helpers that write with the controller's field manager.
 *
 * @typeParam T The primary object type.
 */
export interface ReconcileContext<T extends KubeObject> {
  /** The manager's client (shared by all controllers), for writes and uncached reads. */
  readonly client: Client;
  /**
   * Reads from the manager's shared informers, without a request: the kinds this controller
   * declares (its primary, `owns`, `watches`, `reads`), each as scoped. `get` of a namespaced
   * kind defaults to the primary's namespace. Objects are frozen; reading an undeclared kind
   * throws a `TypeError` naming the option to add.
   */
  readonly cache: CacheReader;
  /**
   * A logger (category `["kubeno", "controller", name]`) whose properties carry the
   * `controller` name, the object's `namespace` (empty when cluster-scoped), `name` and
   * `key`, and a `reconcileID` unique to this call (controller-runtime's field names).
   */
  readonly log: Logger;
  /** Records core/v1 Events, shown by `kubectl describe`; never throws. */
  readonly events: EventRecorder;
  /** The controller's name. */
  readonly controller: string;
  /** The primary's key, `namespace/name` or `name`. */
  readonly key: string;
  /** A reference to the primary object. */
  readonly ref: ObjectRef;
  /**
   * Aborted when this reconcile ran past the controller's `run.timeoutMs` (with a
   * `TimeoutError` naming the key and the bound), or when the manager gives up waiting for
   * in-flight work at shutdown. Once it aborted, the context's writes (`apply`, `create`,
   * `update`, `patch`, `delete`, `patchStatus`, `setCondition`, the finalizer's) reject
   * with its reason unsent. Pass it to your own `fetch`es and to every `ctx.client` call,
   * and check `ctx.signal.throwIfAborted()` in loops.
   */
  readonly signal: AbortSignal;
  /**
   * The name of the cluster this reconcile is for when a fleet runs the controller over many
   * clusters (`createFleet`): `client`, `cache` and `events` are that cluster's, and the log
   * carries a `cluster` property; `hubOf(ctx)` (`@kubeno/kubeno/runtime/cluster`) reads the
   * fleet's hub. `undefined` when the operator runs on one cluster.
   */
  readonly cluster: string | undefined;
  /**
   * Server-side applies `obj` with the controller's field manager (forcing ownership of
   * conflicting fields) after making the primary its controller owner. A namespaced `obj`
   * without a namespace goes into the primary's.
   *
   * @param res The kind of `obj`.
   * @param obj The fields this controller owns, `metadata.name` set.
   * @returns The object as stored.
   * @throws {TypeError} When the primary cannot own `obj` (see `setControllerReference`).
   * @throws {ApiError} When the server refuses the apply.
   */
  apply<U extends KubeObject>(res: Resource<U>, obj: ApplyObject<U>): Promise<U>;
  /**
   * Creates `obj` after making the primary its controller owner (a namespaced `obj` without a
   * namespace goes into the primary's; `metadata.generateName` works). Until the cache shows
   * the new object, `ctx.cache` and the next reconciles of this primary count it as there
   * (client-go's create expectations), so a reconcile right after a create never creates it
   * again.
   *
   * @param res The kind of `obj`.
   * @param obj The object, `metadata.name` or `metadata.generateName` set.
   * @returns The object as stored.
   * @throws {TypeError} When the primary cannot own `obj` (see `setControllerReference`).
   * @throws {ApiError} When the server refuses the create, e.g. `isAlreadyExists(err)`.
   */
  create<U extends KubeObject>(res: Resource<U>, obj: U): Promise<U>;
  /**
   * Replaces `obj` (PUT, guarded by its `resourceVersion`): the primary or any object this
   * controller caches. For the primary, a `resourceVersion` older than this context's own
   * last write is replaced by that write's, so the context's earlier writes never make it
   * stale.
   *
   * @param res The kind of `obj`.
   * @param obj The whole object, e.g. a `structuredClone` of a cached one, changed.
   * @returns The object as stored.
   * @throws {ApiError} When the server refuses it; `isConflict(err)` when someone else
   * changed the object since (the reconcile is retried with backoff on fresh state).
   */
  update<U extends KubeObject>(res: Resource<U>, obj: U): Promise<U>;
  /**
   * Merge-patches an object by name (RFC 7386; `null` removes a field). A namespaced object
   * without `options.namespace` is taken from the primary's namespace.
   *
   * @param res The kind.
   * @param target The object, or its name.
   * @param patch The merge patch.
   * @param options The namespace.
   * @returns The object as stored.
   * @throws {ApiError} When the server refuses the patch.
   */
  patch<U extends KubeObject>(
    res: Resource<U>,
    target: string | U,
    patch: MergePatch<U>,
    options?: ContextWriteOptions,
  ): Promise<U>;
  /**
   * Deletes an object (one that is already gone is not an error). Until the cache shows the
   * deletion, `ctx.cache` and the next reconciles of this primary no longer count it.
   *
   * @param res The kind.
   * @param target The object, or its name.
   * @param options The namespace and propagation policy.
   * @returns A promise that resolves once the server accepted the deletion.
   * @throws {ApiError} When the server refuses it (other than 404 Not Found).
   */
  delete<U extends KubeObject>(
    res: Resource<U>,
    target: string | U,
    options?: ContextDeleteOptions,
  ): Promise<void>;
  /**
   * Merge-patches the status subresource of the primary — once per reconcile: what
   * `patchStatus` and `setCondition` set is merged and written in one request when the
   * reconcile (or finalize) returns or throws, or earlier at {@linkcode flushStatus}; a
   * watcher of the primary never sees half of it. The promise resolves at once, sending
   * nothing. The write is skipped when the server's status (the cached one, or the last one
   * this context wrote) already holds the values — never judged from `obj`, which the
   * reconcile may have changed. Of another object than the primary, it is written at once.
   *
   * A merge patch replaces a list whole, so a write holding a list (e.g. `conditions`) is
   * sent with the resourceVersion it was computed from as a precondition: if the object
   * changed since (another writer set a condition), the server answers 409 and the reconcile
   * is retried on fresh state, instead of the other writer's update being lost.
   *
   * @param obj The object, as reconcile received it or as a write returned it.
   * @param status The status fields to set; `null` removes a field.
   * @returns `obj` with the pending status applied (the primary), or the object as stored.
   * @throws {ApiError} Another object than the primary: when the server refuses the patch.
   */
  patchStatus(obj: T, status: MergePatch<StatusOf<T>>): Promise<T>;
  /**
   * Sets one condition in `obj.status.conditions` with `metav1.Condition` semantics (see
   * `setCondition`), merged into the reconcile's one status write like `patchStatus`;
   * `observedGeneration` defaults to the object's generation. The list is computed from the
   * conditions set earlier in this reconcile, else from the latest state this context knows
   * (its own earlier writes included), and sent with that state's resourceVersion as a
   * precondition, so a condition another writer set meanwhile is never dropped: the server
   * answers 409 and the reconcile is retried.
   *
   * @param obj The object.
   * @param condition The condition's type, status, reason and message.
   * @returns `obj` with the pending status applied (the primary), or the object as stored.
   * @throws {ApiError} Another object than the primary: when the server refuses the patch.
   */
  setCondition(obj: T, condition: ConditionInput): Promise<T>;
  /**
   * Writes the status `patchStatus` and `setCondition` set so far now, instead of when the
   * reconcile returns — before the reconcile waits on something that must see it. Skipped
   * when nothing is pending or the server's status already holds it.
   *
   * @returns The primary as stored (its newest known state when nothing was sent).
   * @throws {ApiError} When the server refuses the patch; `isConflict(err)` when a list in it
   * was computed from an outdated state.
   */
  flushStatus(): Promise<T>;
}

/**
 * What `onError` gets: the failed attempt's context, and where its retries stand.
 *
 * @typeParam T The primary object type.
 */
export interface ErrorContext<T extends KubeObject> extends ReconcileContext<T> {
  /** The attempt that failed, and whether a retry follows (JOSDK's `RetryInfo`). */
  readonly retry: RetryInfo;
}

/** Options of `ctx.patch`. */
export interface ContextWriteOptions {
  /**
   * The object's namespace.
   * @default the target object's, else the primary's
   */
  namespace?: string;
}

/** Options of `ctx.delete`. */
export interface ContextDeleteOptions extends ContextWriteOptions {
  /**
   * What happens to dependents: `Background`, `Foreground` or `Orphan`.
   * @default "Background"
   */
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
}

/** The `status` type of an object type, `never` when it has none. */
export type StatusOf<T> = T extends { status?: infer S } ? NonNullable<S> : never;

/**
 * A function from a watched object to the primaries it affects: their keys, names, or the
 * primaries themselves (e.g. from `cache.list(Primary, { index })`). `cache` reads the
 * controller's cache, as `ctx.cache` does.
 */
export type MapFunc<U> = (
  obj: U,
  cache: CacheReader,
) => Iterable<string | ObjectName | KubeObject>;

/**
 * One entry of `watches`: a kind (with its cache scope and indexes), and how its objects map
 * to primary keys.
 */
export interface WatchSpec<U extends KubeObject = any> extends CacheSpec<U> {
  /**
   * The primaries to enqueue: keys (`namespace/name`, `name`), `{ name, namespace }`, or
   * primary objects.
   */
  readonly map: MapFunc<U>;
  /**
   * Only events that pass every predicate are mapped.
   * @default []
   */
  readonly predicates?: readonly Predicate<U>[];
}

/**
 * A `watches` entry decided at run time, made by {@linkcode watchesFrom}: called with the
 * controller's cache after each reconcile, `fn` returns the watches wanted now.
 */
export interface WatchesFrom {
  /** Tells it apart from a {@linkcode WatchSpec} in `watches`. */
  readonly type: "watchesFrom";
  /** The watches wanted now; the runtime adds and drops watches to match. */
  readonly fn: (cache: CacheReader) => readonly WatchSpec<any>[];
}

/**
 * Watches decided at run time, e.g. from a config object, as an entry of `watches` — the
 * equivalent of controller-runtime's `Controller.Watch` after start and of Java Operator
 * SDK's `dynamicallyRegisterEventSource`. After each reconcile the runtime calls `fn` with
 * the controller's cache, adds the watches of a kind it does not cache yet and drops those it
 * added that are no longer returned. Entries are matched by kind: one returned again keeps
 * the map function and scope it was added with. RBAC cannot be derived for these kinds;
 * grant it with the operator's `rules`.
 *
 * @param fn Returns the watches wanted now; it reads only the cache.
 * @returns The entry, for `reconcile(kind, { watches: [watchesFrom(fn)] })`.
 * @throws {TypeError} When `fn` is not a function.
 *
 * @example Watching the kinds a ConfigMap names
 * ```ts
 * import { reconcile, watchesFrom } from "./reconcile.ts";
 * import { ConfigMap, Secret } from "../../core/kinds.ts";
 * const controller = reconcile(ConfigMap, {
 *   watches: [watchesFrom((cache) =>
 *     cache.get(ConfigMap, "settings", { namespace: "default" })?.data?.secrets === "watch"
 *       ? [{ resource: Secret, map: (s) => [`${s.metadata.namespace}/settings`] }]
 *       : []
 *   )],
 *   reconcile() {},
 * });
 * if (controller.watches.length !== 0 || !controller.watchesFrom) throw new Error();
 * ```
 */
export function watchesFrom(fn: WatchesFrom["fn"]): WatchesFrom {
  if (typeof fn !== "function") {
    throw new TypeError(
      `Cannot make a run-time watch with watchesFrom(): "${fn}" is not a function`,
    );
  }
  return Object.freeze({ type: "watchesFrom", fn });
}

/**
 * What a graph of dependents (`dependents(...)` of `@kubeno/kubeno/runtime/dependents`) adds
 * to a controller's declaration as an entry of `owns`: the kinds it applies, owned as the
 * other `owns` entries are, and what it watches to judge readiness (a Service's
 * EndpointSlices).
 */
export interface DependentKinds {
  /** Tells it apart from a kind or a `{ resource, ... }` entry in `owns`. */
  readonly type: "dependents";
  /** Kinds the graph applies and owns. */
  readonly owns: readonly Resource<any>[];
  /** Kinds the graph watches besides, each with its mapping to primaries. */
  readonly watches: readonly WatchSpec<any>[];
}

/**
 * Everything that causes work besides informers, an entry of `sources`: an external source
 * (`reconcileOn`, `reconcileAllOn`), a timer (`every`) or a daemon (`daemon`). `type` tells
 * them apart.
 *
 * @typeParam T The primary object type.
 */
export type Source<T extends KubeObject = any> = ExternalSource | Timer<T> | Daemon<T>;

/**
 * The `primary` option of {@linkcode reconcile}: which primaries are cached (and so
 * reconciled), their indexes, and which of their events enqueue.
 *
 * @typeParam T The primary object type.
 */
export interface PrimaryOptions<T extends KubeObject> extends CacheScope<T> {
  /**
   * Indexes on the primary kind by name, e.g. `{ byConfigMap: (app) => [key] }`, for
   * `cache.list(Primary, { index: { byConfigMap: key } })` in map functions and reconciles —
   * the equivalent of controller-runtime's `FieldIndexer.IndexField` and of Java Operator
   * SDK's `IndexerResourceCache.addIndexers`.
   * @default {}
   */
  readonly indexes?: Readonly<Record<string, IndexFunc<T>>>;
  /**
   * Filters events on primary objects: only those that pass all of them enqueue — the
   * equivalent of controller-runtime's `For(obj, builder.WithPredicates(...))`, of kube-rs's
   * `predicate_filter` and of Java Operator SDK's `onUpdateFilter` / `genericFilter`.
   * @default [] (every event)
   */
  readonly predicates?: readonly Predicate<T>[];
}

/**
 * The `run` option of {@linkcode reconcile}: how the controller runs — the equivalent of
 * controller-runtime's `controller.Options`.
 */
export interface RunOptions {
  /**
   * Reconciles running at once, each on a different object — the equivalent of
   * controller-runtime's `MaxConcurrentReconciles`, kube-rs's `Config::concurrency` and Java
   * Operator SDK's `concurrentReconciliationThreads`.
   * @default 1
   */
  readonly maxConcurrent?: number;
  /**
   * Of the `maxConcurrent` workers, how many are kept for changes: they take only keys at
   * `DEFAULT_PRIORITY` or higher (watch events that are news, `requeue` without a lower
   * priority), never keys of an initial list, resync or hand-off (`LOW_PRIORITY`). So a
   * start-up storm of low-priority keys holds at most `maxConcurrent - reservedWorkers`
   * workers, and a user's edit made during it starts at once instead of waiting for a
   * storm reconcile to end. While no low-priority key waits, every worker serves every key;
   * the bound on reconciles at once stays `maxConcurrent`. controller-runtime has no
   * equivalent (its priority queue orders keys but a storm can hold every worker); with the
   * priority queue off every key is at one priority, so this has no effect.
   * @default 1 when `maxConcurrent` is 2 or more, else 0
   */
  readonly reservedWorkers?: number;
  /**
   * A bound on one reconcile (or finalize) call, in milliseconds — the equivalent of
   * controller-runtime's `ReconciliationTimeout`. When it passes, `ctx.signal` aborts with a
   * `TimeoutError` naming the key and the bound; from then on the context refuses to send
   * writes, the attempt counts as failed (logged, `controller_runtime_reconcile_timeouts_total`
   * and retried after the key's backoff, like a thrown error), and the worker is free at once
   * for other keys: the runner stops waiting for the attempt and ignores how it ends.
   *
   * A reconcile honours it by passing `ctx.signal` on: to `fetch(url, { signal: ctx.signal })`,
   * to every `ctx.client` call (`{ signal: ctx.signal }`), to its own waits; and by calling
   * `ctx.signal.throwIfAborted()` in loops. Work that does not look at the signal goes on
   * running after the bound, possibly while the key's retry runs: only its writes through
   * `ctx` are stopped, not what it sends elsewhere (`ctx.client` without the signal included).
   * @default no bound (as controller-runtime)
   */
  readonly timeoutMs?: number;
  /**
   * Field manager of `ctx.apply`, `ctx.patchStatus` and finalizer writes — the equivalent of
   * controller-runtime's `client.FieldOwner`, kube-rs's `PatchParams::apply(manager)` and Java
   * Operator SDK's `fieldManager`.
   * @default the controller name
   */
  readonly fieldManager?: string;
}

/** The functions and options of {@linkcode reconcile}. */
export interface ReconcileOptions<T extends KubeObject> {
  /**
   * Controller name: in logs, metrics, the work queue and Events — the equivalent of
   * controller-runtime's `builder.Named` and Java Operator SDK's `name`.
   * @default the kind lower-cased
   */
  name?: string;
  /**
   * Brings the cluster in line with `obj`, the current state of a primary object — the
   * equivalent of controller-runtime's `Reconciler.Reconcile`, kube-rs's reconciler and Java
   * Operator SDK's `Reconciler.reconcile`.
   *
   * @param obj The object, a copy of the cached one: changing it changes nothing else.
   * @param ctx Cache, client, logger, events and write helpers.
   * @returns `undefined` when done, or `requeue(ms)`.
   */
  reconcile(obj: T, ctx: ReconcileContext<T>): ReconcileResult | Promise<ReconcileResult>;
  /**
   * Finalizer name, a qualified name such as `apps.kubeno.dev/cleanup`; requires `finalize` —
   * the equivalent of kube-rs's `finalizer(api, name, ...)` and Java Operator SDK's
   * `finalizerName`.
   * @default none (no finalizer)
   */
  finalizer?: string;
  /**
   * Cleans up what the cluster does not clean up itself, once `obj` is being deleted —
   * the equivalent of kube-rs's `finalizer::Event::Cleanup` and Java Operator SDK's
   * `Cleaner.cleanup`. Requires `finalizer`. The finalizer is removed only after this
   * succeeds; a thrown error retries with backoff.
   *
   * @param obj The object, `deletionTimestamp` set.
   * @param ctx As for `reconcile`.
   * @returns `undefined` when done (the finalizer is then removed), or `requeue(ms)` to
   * finalize again later, keeping the finalizer.
   * @default none (no finalizer)
   */
  finalize?(obj: T, ctx: ReconcileContext<T>): ReconcileResult | Promise<ReconcileResult>;
  /**
   * The status to write after a failed attempt (of `reconcile` or `finalize`), e.g.
   * `{ errorMessage: error.message }` — the equivalent of Java Operator SDK's
   * `ErrorStatusHandler.updateErrorStatus` returning `ErrorStatusUpdateControl.patchStatus`;
   * controller-runtime has none (the reconciler writes it before returning the error). What
   * it returns is merge-patched into the status once, as `ctx.patchStatus` does (skipped when
   * the status already holds it); `undefined` writes nothing. The retry is scheduled as
   * without it: after the key's backoff, or not at all after a `TerminalError` or the last
   * of `retry.maxAttempts`. `ctx.retry` says which attempt failed and whether it was the
   * last (JOSDK's `RetryInfo`). A throw from it is logged and changes nothing else.
   *
   * @param obj The primary as the failed attempt read it, a fresh copy.
   * @param error What the attempt threw (a `TimeoutError` when it ran past `run.timeoutMs`).
   * @param ctx The attempt's context (a fresh one after a timeout), and `retry`.
   * @returns The status fields to set, or `undefined`.
   * @default none (no status is written for an error)
   */
  onError?(
    obj: T,
    error: unknown,
    ctx: ErrorContext<T>,
  ): MergePatch<StatusOf<T>> | undefined | Promise<MergePatch<StatusOf<T>> | undefined>;
  /**
   * The retry policy after a failed attempt: `baseDelayMs` (the first wait, doubling),
   * `maxDelayMs` (the longest) and `maxAttempts` (then a `RetriesExhausted` Warning Event, a
   * `Ready=False` condition when the status has `conditions`, and no retry until the object
   * changes) — the equivalent of controller-runtime's `controller.Options.RateLimiter` with
   * `workqueue.NewTypedItemExponentialFailureRateLimiter(base, max)` (which has no maximum of
   * attempts) and of Java Operator SDK's `@GradualRetry(maxAttempts, initialInterval,
   * intervalMultiplier = 2, maxInterval)`. Fields not set come from `operator({ retry })`,
   * then from the defaults. Delays given here replace the manager's `rateLimiter` for this
   * controller. See `retry.ts` for the flow.
   * @default 5 ms doubling to 1,000,000 ms, attempts without end
   */
  retry?: RetryOptions;
  /**
   * Whether a reconcile that returns (`undefined` or `requeue(ms)`) sets
   * `status.observedGeneration` to the `metadata.generation` of the object it read, in its
   * one status write — the equivalent of Java Operator SDK's `ObservedGenerationAwareStatus`
   * (controller-runtime leaves it to the reconcile). Only when the primary's status schema
   * (from `defineResource`) has `observedGeneration`; a reconcile that set no status writes
   * one for it alone, unless the server's status already holds it. A value the reconcile
   * sets itself wins; a reconcile that throws, and `finalize`, do not set it.
   * @default true
   */
  observedGeneration?: boolean;
  /**
   * The primary kind's cache scope (namespaces, selectors, transform), its `indexes` and
   * `predicates` — the equivalent of controller-runtime's `For(obj, WithPredicates(...))`
   * with `cache.Options.ByObject`, kube-rs's `Controller::new(api, watcher::Config)` and Java
   * Operator SDK's `informer` configuration.
   * @default every primary in the manager's namespaces, no index, every event
   */
  primary?: PrimaryOptions<T>;
  /**
   * Kinds this controller creates and owns; a change to one whose controller ownerReference
   * points at a primary reconciles that primary — the equivalent of controller-runtime's
   * `Owns`, kube-rs's `Controller::owns` and Java Operator SDK's dependent resources. An entry
   * is a kind (`metadataOnly(kind)` to cache metadata only), `{ resource, namespaces,
   * labelSelector, ..., indexes }`, or a graph of dependents (`dependents(...)`): its kinds
   * are owned as if listed here and what it needs to judge readiness is watched; the
   * reconcile applies the graph itself, with `graph.reconcile(obj, ctx)`.
   * @default []
   */
  owns?: readonly (Resource<any> | CacheSpec<any> | DependentKinds)[];
  /**
   * Other kinds to watch, each with a function mapping its objects to primaries (it may read
   * the cache, e.g. an index on the primary), optionally predicates, a cache scope and
   * indexes — the equivalent of controller-runtime's `Watches(obj,
   * EnqueueRequestsFromMapFunc(fn))`, kube-rs's `Controller::watches` and Java Operator
   * SDK's `InformerEventSource` with a `SecondaryToPrimaryMapper`. A
   * {@linkcode watchesFrom}`(fn)` entry decides watches at run time.
   * @default []
   */
  watches?: readonly (WatchSpec<any> | WatchesFrom)[];
  /**
   * Kinds `ctx.cache` and map functions read, cached but not watched for changes: a kind,
   * its `metadataOnly(...)` view, or `{ resource, namespaces, ..., indexes }` — the
   * equivalent of a controller-runtime cache read of a kind no builder watches, of a kube-rs
   * `reflector` store passed in the context, and of Java Operator SDK's secondary resources
   * read with `context.getSecondaryResource`. RBAC gets `get`/`list`/`watch` on them.
   * @default []
   */
  reads?: readonly (Resource<any> | CacheSpec<any>)[];
  /**
   * What causes work besides informers: `reconcileOn(iterable)` queues the keys an async
   * iterable yields and `reconcileAllOn(iterable)` every primary each time it yields — the
   * equivalent of kube-rs's `reconcile_on` / `reconcile_all_on` and controller-runtime's
   * `source.Channel`; `every(ms, fn)` runs a function on every cached primary at an interval
   * (a tick is skipped while its key is being reconciled) and `daemon(fn)` one long-running
   * task per cached primary (its signal aborts when the object is deleted, leadership or the
   * shard is lost, or on shutdown) — the equivalent of kopf's timers and daemons, which
   * controller-runtime and kube-rs leave to the user.
   * @default []
   */
  sources?: readonly Source<T>[];
  /**
   * How the controller runs: `maxConcurrent`, `reservedWorkers`, `timeoutMs`, `fieldManager`
   * — the equivalent of controller-runtime's `controller.Options` and kube-rs's
   * `controller::Config`.
   * @default one worker, no bound, the controller name as field manager
   */
  run?: RunOptions;
}

/**
 * A controller description made by {@linkcode reconcile}, its declaration normalized. Run it
 * with a manager; read it to derive RBAC (`resource`, `owns`, `watches`, `finalizer`).
 *
 * @typeParam T The primary object type.
 */
export interface Controller<T extends KubeObject = any> {
  /** Controller name. */
  readonly name: string;
  /** The primary kind. */
  readonly resource: Resource<T>;
  /** Owned kinds, those of `dependents(...)` graphs included. */
  readonly owns: readonly Resource<any>[];
  /** Watched kinds and their mappings (not the run-time ones of `watchesFrom`). */
  readonly watches: readonly WatchSpec<any>[];
  /** Kinds read from the cache only. */
  readonly reads: readonly Resource<any>[];
  /**
   * Every kind the controller caches, primary first, with its scope and indexes: what the
   * manager starts informers for, what `ctx.cache` reads and what RBAC is derived from.
   */
  readonly caches: readonly CachedKind[];
  /** Predicates on primary events (`primary.predicates`). */
  readonly predicates: readonly Predicate<T>[];
  /** Finalizer name, if any. */
  readonly finalizer?: string;
  /** Reconciles running at once (`run.maxConcurrent`). */
  readonly maxConcurrent: number;
  /** Workers that take only changes, not low-priority keys (`run.reservedWorkers`). */
  readonly reservedWorkers: number;
  /** The bound on one reconcile in milliseconds, if any (`run.timeoutMs`). */
  readonly timeoutMs?: number;
  /** Field manager of the controller's writes (`run.fieldManager`). */
  readonly fieldManager: string;
  /**
   * `true` when a reconcile that returns sets `status.observedGeneration`: the status schema
   * has it and the `observedGeneration` option is not `false`.
   */
  readonly observedGeneration?: true;
  /**
   * `true` when `owns` holds a `dependents(...)` graph: its primary objects are ApplySet
   * parents, so the operator labels the primary's CRD `applyset.kubernetes.io/is-parent-type:
   * "true"`.
   */
  readonly applySetParent?: true;
  /** The reconcile function. */
  readonly reconcile: ReconcileOptions<T>["reconcile"];
  /** The finalize function, if any. */
  readonly finalize?: ReconcileOptions<T>["finalize"];
  /** The error status handler, if any. */
  readonly onError?: ReconcileOptions<T>["onError"];
  /** The `retry` option as given (merged with `operator({ retry })`), if any. */
  readonly retryOptions?: RetryOptions;
  /** The retry policy, its defaults filled in, when `retry` was given. */
  readonly retry?: RetryPolicy;
  /** The external sources of `sources`, read while the controller runs. */
  readonly external?: readonly ExternalSource[];
  /** The timers of `sources`, run per cached primary while the controller runs. */
  readonly timers?: readonly Timer<T>[];
  /** The daemons of `sources`, one task per cached primary while the controller runs. */
  readonly daemons?: readonly Daemon<T>[];
  /** The `watchesFrom(fn)` entries of `watches` as one function, called after each reconcile. */
  readonly watchesFrom?: WatchesFrom["fn"];
}

const QUALIFIED = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** The options `reconcile()` knows, for the error naming one it does not. */
const OPTIONS: Readonly<Record<string, readonly string[]>> = {
  "": [
    "name",
    "reconcile",
    "finalizer",
    "finalize",
    "primary",
    "owns",
    "watches",
    "reads",
    "sources",
    "run",
    "retry",
    "onError",
    "observedGeneration",
  ],
  primary: ["namespaces", "labelSelector", "fieldSelector", "transform", "indexes", "predicates"],
  run: ["maxConcurrent", "reservedWorkers", "timeoutMs", "fieldManager"],
};

/**
 * Describes a level-based controller for `resource`. See the module docs for the flow,
 * the option groups and the guarantees.
 *
 * @typeParam T The primary object type, inferred from `resource`.
 * @param resource The primary kind, e.g. one made with `defineResource`.
 * @param options The `reconcile` function, and optionally `name`, `finalize` + `finalizer`,
 * `primary`, `owns`, `watches`, `reads`, `sources`, `run`, `retry` and `onError`.
 * @returns A frozen controller description for a manager to run.
 * @throws {TypeError} When an option is unknown, `finalize` is given without `finalizer` or
 * the reverse, the finalizer is not a qualified name, a `watches` entry has no map function,
 * a `sources` entry is not one, or a kind is declared twice with different scopes.
 * @throws {RangeError} When `run.maxConcurrent` is not a positive integer,
 * `run.reservedWorkers` not an integer below it, or `run.timeoutMs` not a positive finite
 * number, or a `retry` field out of range (see `retryPolicyOf`).
 *
 * @example A controller that owns ConfigMaps
 * ```ts
 * import { reconcile, requeue } from "./reconcile.ts";
 * import { ConfigMap, Secret } from "../../core/kinds.ts";
 * const controller = reconcile(Secret, {
 *   owns: [ConfigMap],
 *   finalizer: "example.com/cleanup",
 *   async reconcile(secret, ctx) {
 *     const name = `${secret.metadata.name}-keys`;
 *     const data = { keys: Object.keys(secret.data ?? {}).join(",") };
 *     await ctx.apply(ConfigMap, { metadata: { name }, data });
 *     return requeue(60_000);
 *   },
 *   finalize(secret, ctx) {
 *     ctx.log.info("Secret {key} is going away", { key: ctx.key });
 *   },
 *   run: { maxConcurrent: 4 },
 * });
 * if (controller.name !== "secret" || controller.owns[0] !== ConfigMap) throw new Error();
 * if (controller.maxConcurrent !== 4 || controller.reservedWorkers !== 1) throw new Error();
 * ```
 *
 * @example Reading from the cache: a read kind, an index, an index-backed map function
 * ```ts
 * import { reconcile } from "./reconcile.ts";
 * import { ConfigMap, Pod, Secret } from "../../core/kinds.ts";
 * import { metadataOnly } from "../../core/metadata_only.ts";
 * import { objectKey } from "../../core/object_key.ts";
 * // Secrets naming, in an annotation, the ConfigMap they are built from.
 * const source = (s: Secret) => s.metadata.annotations?.["example.com/source"];
 * const controller = reconcile(Secret, {
 *   primary: {
 *     indexes: {
 *       bySource: (s) => source(s) ? [objectKey({ namespace: s.metadata.namespace, name: source(s)! })] : [],
 *     },
 *   },
 *   watches: [{
 *     resource: ConfigMap,
 *     map: (cm, cache) => cache.list(Secret, { index: { bySource: objectKey(cm) } }),
 *   }],
 *   reads: [metadataOnly(Pod)],
 *   reconcile(secret, ctx) {
 *     const cm = ctx.cache.get(ConfigMap, source(secret) ?? ""); // no request: from the cache
 *     const pods = ctx.cache.list(metadataOnly(Pod), { labelSelector: { app: "web" } });
 *     ctx.log.info("{key}: {keys} keys, {pods} pods", {
 *       key: ctx.key,
 *       keys: Object.keys(cm?.data ?? {}).length,
 *       pods: pods.length,
 *     });
 *   },
 * });
 * const kinds = controller.caches.map((k) => `${k.resource.kind}:${k.roles.join("+")}`);
 * if (kinds.join() !== "Secret:primary,ConfigMap:watches,Pod:reads") throw new Error(kinds.join());
 * ```
 */
export function reconcile<T extends KubeObject>(
  resource: Resource<T>,
  options: ReconcileOptions<T>,
): Controller<T> {
  const name = options.name ?? resource.kind.toLowerCase();
  checkOptions(name, options);
  const { predicates = [], indexes, ...scope } = options.primary ?? {};
  const { owns, watches, graphs, from } = declaredKinds(name, options);
  const reads = (options.reads ?? []).map(cacheSpecOf);
  const caches = cachedKinds({
    name,
    primary: { ...scope, resource, indexes },
    entries: [
      ...owns.map((e) => ["owns", e] as const),
      ...watches.map((e) => ["watches", e] as const),
      ...reads.map((e) => ["reads", e] as const),
    ],
  });
  const { finalizer, finalize } = options;
  const { external, timers, daemons } = sourcesOf(name, options.sources ?? []);
  return Object.freeze({
    name,
    resource,
    owns: Object.freeze(owns.map((e) => e.resource)),
    watches: Object.freeze(watches),
    reads: Object.freeze(reads.map((e) => e.resource)),
    caches: Object.freeze(caches),
    predicates: Object.freeze([...predicates]),
    ...(finalizer !== undefined ? { finalizer, finalize } : {}),
    ...runOf(name, options.run ?? {}),
    ...(graphs ? { applySetParent: true as const } : {}),
    ...(options.observedGeneration !== false && hasObservedGeneration(resource)
      ? { observedGeneration: true as const }
      : {}),
    reconcile: options.reconcile,
    ...(options.onError ? { onError: options.onError } : {}),
    ...(options.retry
      ? {
        retryOptions: Object.freeze({ ...options.retry }),
        retry: retryPolicyOf(`controller "${name}"`, options.retry),
      }
      : {}),
    ...(external.length ? { external: Object.freeze(external) } : {}),
    ...(timers.length ? { timers: Object.freeze(timers) } : {}),
    ...(daemons.length ? { daemons: Object.freeze(daemons) } : {}),
    ...(from.length
      ? { watchesFrom: (cache: CacheReader) => from.flatMap((w) => [...w.fn(cache)]) }
      : {}),
  });
}

/** Throws for an unknown option, a missing `reconcile`, or a finalizer without its function. */
function checkOptions<T extends KubeObject>(name: string, options: ReconcileOptions<T>): void {
  const fail = (msg: string): never => {
    throw new TypeError(`Cannot define controller "${name}": ${msg}`);
  };
  for (const [path, known] of Object.entries(OPTIONS)) {
    const given = path ? (options as unknown as Record<string, object>)[path] : options;
    for (const key of Object.keys(given ?? {})) {
      const option = path ? `${path}.${key}` : key;
      if (!known.includes(key)) fail(`unknown option "${option}" (known: ${known.join(", ")})`);
    }
  }
  if (typeof options.reconcile !== "function") fail("reconcile is not a function");
  if (options.onError !== undefined && typeof options.onError !== "function") {
    fail("onError is not a function");
  }
  const { observedGeneration } = options;
  if (observedGeneration !== undefined && typeof observedGeneration !== "boolean") {
    fail(`observedGeneration must be true or false, got "${observedGeneration}"`);
  }
  const { finalizer, finalize } = options;
  if (finalize && !finalizer) fail("finalize needs a finalizer name");
  if (finalizer !== undefined && !finalize) {
    fail(`finalizer "${finalizer}" needs a finalize function`);
  }
  if (finalizer !== undefined && (!QUALIFIED.test(finalizer) || finalizer.length > 316)) {
    fail(`finalizer "${finalizer}" is not a qualified name such as "example.com/cleanup"`);
  }
}

/** `owns` and `watches` split into kinds, `dependents(...)` graphs and `watchesFrom` entries. */
function declaredKinds<T extends KubeObject>(name: string, options: ReconcileOptions<T>) {
  const isGraph = (e: unknown): e is DependentKinds => (e as DependentKinds).type === "dependents";
  const isFrom = (e: unknown): e is WatchesFrom => (e as WatchesFrom).type === "watchesFrom";
  const graphs = (options.owns ?? []).filter(isGraph);
  const from = (options.watches ?? []).filter(isFrom);
  const watches = [
    ...(options.watches ?? []).filter((e): e is WatchSpec<any> => !isFrom(e)),
    ...graphs.flatMap((g) => g.watches),
  ];
  for (const w of watches) {
    if (typeof w.map !== "function") {
      throw new TypeError(
        `Cannot define controller "${name}": watches entry for "${w.resource?.kind}" has no map function`,
      );
    }
  }
  // A kind both in owns and in a graph is owned once, as its first declaration says.
  const owns = [
    ...(options.owns ?? []).filter((e): e is Resource<any> | CacheSpec<any> => !isGraph(e)),
    ...graphs.flatMap((g) => g.owns),
  ].map(cacheSpecOf)
    .filter((e, i, all) => all.findIndex((o) => kindKey(o.resource) === kindKey(e.resource)) === i);
  return { owns, watches, graphs: graphs.length > 0, from };
}

/** The entries of `sources` by type. */
function sourcesOf<T extends KubeObject>(name: string, sources: readonly Source<T>[]) {
  const external: ExternalSource[] = [];
  const timers: Timer<T>[] = [];
  const daemons: Daemon<T>[] = [];
  sources.forEach((s, i) => {
    if (s?.type === "external") external.push(s);
    else if (s?.type === "timer") timers.push(s);
    else if (s?.type === "daemon") daemons.push(s);
    else {
      throw new TypeError(
        `Cannot define controller "${name}": sources[${i}] is not made by reconcileOn(), reconcileAllOn(), every() or daemon()`,
      );
    }
  });
  return { external, timers, daemons };
}

/**
 * Whether the status schema of `res` declares `observedGeneration`: read from the CRD that
 * `defineResource` builds (built-in kinds and resources without a CRD never do).
 */
function hasObservedGeneration(res: Resource<any>): boolean {
  const crd = (res as { crd?: () => { spec: CustomResourceDefinitionSpec } }).crd?.();
  const schema = crd?.spec.versions.find((v) => v.name === res.version)?.schema?.openAPIV3Schema;
  return schema?.properties?.status?.properties?.observedGeneration !== undefined;
}

/** The `run` option checked, its defaults filled in. */
function runOf(name: string, run: RunOptions) {
  const fail = (msg: string): never => {
    throw new RangeError(`Cannot define controller "${name}": ${msg}`);
  };
  const maxConcurrent = run.maxConcurrent ?? 1;
  if (!(Number.isInteger(maxConcurrent) && maxConcurrent > 0)) {
    fail(`run.maxConcurrent must be a positive integer, got "${maxConcurrent}"`);
  }
  const reservedWorkers = run.reservedWorkers ?? (maxConcurrent >= 2 ? 1 : 0);
  if (
    !(Number.isInteger(reservedWorkers) && reservedWorkers >= 0 && reservedWorkers < maxConcurrent)
  ) {
    fail(
      `run.reservedWorkers must be an integer from 0 to run.maxConcurrent - 1 (${
        maxConcurrent - 1
      }), got "${reservedWorkers}"`,
    );
  }
  const { timeoutMs } = run;
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    fail(`run.timeoutMs must be a positive finite number, got "${timeoutMs}"`);
  }
  return {
    maxConcurrent,
    reservedWorkers,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    fieldManager: run.fieldManager ?? name,
  };
}
