/**
 * The sources stage: every way a key enters a controller, turned into keys with a cause and a
 * priority — kube-rs's `trigger_self` / `trigger_owners` / `trigger_others` and
 * controller-runtime's `source.Kind` with its event handlers and predicates.
 *
 * | source | keys | cause |
 * | --- | --- | --- |
 * | an event of the primary kind that passes the predicates | the object's own ({@linkcode selfKey}) | `primary` |
 * | an event of an owned kind | its controller owners, before and after ({@linkcode ownerKeys}) | `owns` |
 * | an event of a watched kind that passes its predicates | what its map function returns ({@linkcode mappedKeys}) | `watches` |
 * | an event of a kind only read | none: it only confirms the controller's writes | — |
 * | an optional kind coming to be served | every primary, once its cache synced | `served` |
 * | an external source (`reconcileOn`, `reconcileAllOn`) | what it yields, or every primary | `source` |
 *
 * Informer events go on to the write gate (`write_gate.ts`) with their keys; the other
 * sources go straight to the queue, since they are no echo of anything. An initial list or a
 * resync gives its keys `LOW_PRIORITY`, a real change `DEFAULT_PRIORITY`, as
 * controller-runtime's priority queue does. Timers and daemons (`every`, `daemon`) run per
 * cached primary beside the queue (`../../source/background.ts`); this stage tells them
 * which primaries exist.
 *
 * @module
 */
import { groupOf } from "../../../core/api_version.ts";
import { kindKey } from "../../../core/kind_key.ts";
import type { KubeObject } from "../../../core/object.ts";
import { objectKey } from "../../../core/object_key.ts";
import { controllerOf } from "../../../core/owner.ts";
import type { Resource } from "../../../core/resource.ts";
import { firstLine } from "../../../util/cli_io.ts";
import type { Logger } from "../../../util/log.ts";
import type { InformerEventInfo } from "../../cache/informer.ts";
import type { InformerHold } from "../../cache/informer_factory.ts";
import type { CacheReader } from "../../cache/reader.ts";
import { DEFAULT_PRIORITY, LOW_PRIORITY } from "../../queue/workqueue.ts";
import type { Background } from "../../source/background.ts";
import { runExternal } from "../../source/external.ts";
import type { ObjectEvent } from "../../watch/watch.ts";
import { type CachedKind, isOptionalKind } from "../caches.ts";
import type { Cause, ControllerMetricsHooks } from "../metrics_hooks.ts";
import type { Predicate } from "../predicates.ts";
import type { Controller, WatchSpec } from "../reconcile.ts";
import type { ControllerInformers } from "./informers.ts";
import { ControllerError } from "../controller_error.ts";
import type { Intake } from "./intake.ts";
import { type KeyedEvent, trackKey, type WriteGate } from "./write_gate.ts";

/**
 * Whether an event passes every predicate (none passes all).
 *
 * @param predicates The predicates.
 * @param ev The event.
 * @returns `true` when none refuses it.
 */
export function passes<U>(predicates: readonly Predicate<U>[], ev: ObjectEvent<U>): boolean {
  return predicates.every((p) => p(ev));
}

/**
 * The primary's own key: an event of the primary kind queues the object itself.
 *
 * @param ev An event of the primary kind.
 * @returns The object's key.
 */
export function selfKey(ev: ObjectEvent<KubeObject>): string {
  return objectKey(ev.object);
}

/**
 * The primaries that are the controller owner of an owned object, before and after the
 * event: a changed owner queues both.
 *
 * @param owner The primary kind.
 * @param ev An event of an owned kind.
 * @returns The owners' keys (in the object's namespace when the primary is namespaced).
 */
export function ownerKeys(owner: Resource<any>, ev: ObjectEvent<KubeObject>): Set<string> {
  const keys = new Set<string>();
  for (const obj of statesOf(ev)) {
    const ref = controllerOf(obj);
    if (!ref || ref.kind !== owner.kind || groupOf(ref.apiVersion) !== owner.group) continue;
    const namespace = owner.namespaced ? obj.metadata.namespace : undefined;
    keys.add(objectKey({ namespace, name: ref.name }));
  }
  return keys;
}

/**
 * The primaries a watched object maps to, before and after the event, when the event passes
 * the watch's predicates.
 *
 * @param spec The watch's map function and predicates.
 * @param cache What the map function may read.
 * @param ev An event of the watched kind.
 * @returns The keys the map function returned for either state; none when a predicate
 * refused the event.
 */
export function mappedKeys<U extends KubeObject>(
  spec: Pick<WatchSpec<U>, "map" | "predicates">,
  cache: CacheReader,
  ev: ObjectEvent<U>,
): Set<string> {
  const keys = new Set<string>();
  if (!passes(spec.predicates ?? [], ev)) return keys;
  for (const obj of statesOf(ev)) {
    for (const k of spec.map(obj, cache)) keys.add(typeof k === "string" ? k : objectKey(k));
  }
  return keys;
}

/**
 * The priority of an informer event's keys: those of an initial list or a resync wait
 * behind real changes (controller-runtime's `handler.WithLowPriorityWhenUnchanged`).
 *
 * @param ev The event.
 * @param info Where it came from.
 * @returns `LOW_PRIORITY` or `DEFAULT_PRIORITY`.
 */
export function priorityOf(ev: ObjectEvent<KubeObject>, info: InformerEventInfo): number {
  const unchanged = info.initialList || (ev.type === "modified" && ev.old === ev.object);
  return unchanged ? LOW_PRIORITY : DEFAULT_PRIORITY;
}

/** The states an event shows: the old and the new one of a modification, else the object. */
function statesOf<U>(ev: ObjectEvent<U>): U[] {
  return ev.type === "modified" && ev.old ? [ev.old, ev.object] : [ev.object];
}

/** What {@linkcode Sources} feeds and reads. */
export interface SourcesInit<T extends KubeObject> {
  readonly controller: Controller<T>;
  /** The controller's informers. */
  readonly informers: ControllerInformers<T>;
  /** The next stage of informer events. */
  readonly gate: WriteGate;
  /** Timers and daemons, told which primaries exist. */
  readonly background: Background<T>;
  /** The queue stage, for keys that are no informer event's. */
  readonly intake: Intake;
  /** Leave optional kinds uncached until {@linkcode Sources.prototype.served}. */
  readonly deferOptional: boolean;
  readonly metrics?: ControllerMetricsHooks;
  readonly log: Logger;
}

/** Removes what it was returned for: the handlers of one kind. */
type Unwire = () => void;
const NO_KEYS: readonly string[] = [];

/**
 * The sources of one controller's keys. See the module doc.
 *
 * @typeParam T The primary object type.
 */
export class Sources<T extends KubeObject> {
  readonly #init: SourcesInit<T>;
  // The handlers of each cached kind, by kind key.
  readonly #wired = new Map<string, Unwire>();
  // Optional kinds left out until served, by kind key, with their holds while cached.
  readonly #optional = new Map<string, { kind: CachedKind; holds?: InformerHold<any>[] }>();
  // Watches added from `watchesFrom`, by kind key: what `addWatch` returned.
  readonly #runTime = new Map<string, Promise<{ remove(): Promise<void> } | undefined>>();
  readonly #stop = new AbortController();

  /** @param init The controller, its informers, the next stages. */
  constructor(init: SourcesInit<T>) {
    this.#init = init;
    const { controller, informers, metrics } = init;
    for (const kind of controller.caches) {
      if (init.deferOptional && isOptionalKind(kind)) {
        this.#optional.set(kindKey(kind.resource), { kind });
        informers.leaveOut(kind.resource);
        metrics?.kindServed?.(controller.name, kind.resource, false);
      } else informers.hold(kind);
    }
    for (const kind of controller.caches) {
      const key = kindKey(kind.resource);
      if (!this.#optional.has(key)) this.#wired.set(key, this.#wire(kind));
    }
  }

  /**
   * The optional kinds left out until served (with `deferOptional`).
   *
   * @returns Their resources.
   */
  get optionalKinds(): readonly Resource<any>[] {
    return [...this.#optional.values()].map((o) => o.kind.resource);
  }

  /**
   * The optional kinds not cached now, because the API server does not serve them.
   *
   * @returns Their resources.
   */
  get missingKinds(): readonly Resource<any>[] {
    return [...this.#optional.values()].filter((o) => !o.holds).map((o) => o.kind.resource);
  }

  /**
   * Starts reading the external sources (once the workers run).
   */
  start(): void {
    const { controller, log } = this.#init;
    for (const source of controller.external ?? []) {
      void runExternal(source, {
        enqueue: (key) => this.enqueue(key, "source"),
        reconcileAll: () => void this.reconcileAll("source"),
        failed: (error) =>
          log.error("Controller {controller} stopped reading a source: {error}", {
            controller: controller.name,
            error: firstLine(error),
          }),
      }, this.#stop.signal);
    }
  }

  /**
   * Queues a key from outside the informers.
   *
   * @param key The primary's key.
   * @param cause Why.
   */
  enqueue(key: string, cause: Cause): void {
    if (!this.#stop.signal.aborted) this.#init.intake.enqueue(key, cause);
  }

  /**
   * Queues every cached primary, behind real changes.
   *
   * @param cause Why.
   * @returns How many keys were queued.
   */
  reconcileAll(cause: Cause): number {
    if (this.#stop.signal.aborted) return 0;
    const keys = this.#init.informers.primaryKeys();
    for (const key of keys) this.#init.intake.enqueue(key, cause, LOW_PRIORITY);
    return keys.length;
  }

  /**
   * Starts or stops caching an optional kind as the API server starts or stops serving it.
   * See `ControllerRuntime.served`.
   *
   * @param res An optional kind of this controller.
   * @param served Whether the API server serves it now.
   * @returns A promise that resolves once its informers are held or released.
   */
  async served(res: Resource<any>, served: boolean): Promise<void> {
    const { controller, informers, metrics, log } = this.#init;
    const key = kindKey(res);
    const opt = this.#optional.get(key);
    if (!opt || served === !!opt.holds || (served && this.#stop.signal.aborted)) return;
    const what = { controller: controller.name, kind: `${res.kind} (${res.apiVersion})` };
    metrics?.kindServed?.(controller.name, res, served);
    if (served) {
      const holds: InformerHold<any>[] = [];
      informers.hold(opt.kind, holds);
      opt.holds = holds;
      this.#wired.set(key, this.#wire(opt.kind));
      log.info("Controller {controller} caches {kind}: the API server serves it", what);
      // A reconcile that ran without the kind (e.g. could not apply it) runs again with it,
      // once its cache holds what the server has.
      void Promise.all(holds.map((h) => h.informer.synced({ signal: this.#stop.signal })))
        .then(() => void this.reconcileAll("served"), () => {});
      return;
    }
    const holds = opt.holds ?? [];
    opt.holds = undefined;
    this.#unwire(key);
    informers.leaveOut(res);
    log.warn("Controller {controller} runs without {kind}: the API server does not serve it", what);
    await Promise.all(holds.map((h) => h.release()));
  }

  /**
   * Adds a watch while the controller runs. See `ControllerRuntime.addWatch`.
   *
   * @param spec The kind, its cache scope and indexes, the map function and predicates.
   * @param options `signal` stops waiting for the informer to sync.
   * @returns Once its informer synced: `remove`, which drops the watch.
   * @throws {TypeError} When the controller already caches that kind, or was stopped.
   */
  async addWatch<U extends KubeObject>(
    spec: WatchSpec<U>,
    options: { signal?: AbortSignal } = {},
  ): Promise<{ remove(): Promise<void> }> {
    const { controller, informers } = this.#init;
    const key = kindKey(spec.resource);
    const name = `controller "${controller.name}"`;
    if (this.#stop.signal.aborted) {
      throw new TypeError(`Cannot add a watch to ${name}: it was stopped`);
    }
    if (informers.has(key)) {
      throw new TypeError(
        `Cannot add a watch of ${spec.resource.kind} to ${name}: it already caches that kind`,
      );
    }
    const kind: CachedKind = { ...spec, roles: ["watches"], indexes: spec.indexes ?? {} };
    const holds: InformerHold<any>[] = [];
    const held = informers.hold(kind, holds);
    this.#wired.set(key, this.#wire(kind, [spec]));
    let removed: Promise<void> | undefined;
    const remove = () =>
      removed ??= (async () => {
        this.#unwire(key);
        informers.remove(spec.resource);
        await Promise.all(holds.map((h) => h.release()));
      })();
    try {
      await Promise.all(held.map((inf) => inf.synced(options)));
    } catch (err) {
      await remove();
      throw err;
    }
    return { remove };
  }

  /**
   * Adds the watches `watchesFrom` wants now and drops those it no longer returns (after each
   * reconcile). A kind the controller caches otherwise is left alone; one whose watch cannot
   * start is logged and tried again after the next reconcile.
   */
  syncWatches(): void {
    const { controller, informers, log } = this.#init;
    const from = controller.watchesFrom;
    if (!from || this.#stop.signal.aborted) return;
    let wanted: readonly WatchSpec[];
    try {
      wanted = from(informers.reader);
    } catch (err) {
      log.error("Controller {controller} cannot choose its watches: {error}", {
        controller: controller.name,
        error: firstLine(err),
      });
      return;
    }
    const keys = new Map(wanted.map((w) => [kindKey(w.resource), w]));
    for (const [key, spec] of keys) {
      if (this.#runTime.has(key) || informers.has(key)) continue;
      const added = this.addWatch(spec).catch((err) => {
        log.error("Controller {controller} cannot watch {kind}: {error}", {
          controller: controller.name,
          kind: `${spec.resource.kind} (${spec.resource.apiVersion})`,
          error: firstLine(err),
        });
        this.#runTime.delete(key);
        return undefined;
      });
      this.#runTime.set(key, added);
    }
    for (const [key, added] of this.#runTime) {
      if (keys.has(key)) continue;
      this.#runTime.delete(key);
      void added.then((w) => w?.remove());
    }
  }

  /** Stops every source: no handler, external source or served kind queues a key after it. */
  stop(): void {
    this.#stop.abort(new ControllerError(`Controller "${this.#init.controller.name}" was stopped`));
    for (const key of [...this.#wired.keys()]) this.#unwire(key);
  }

  /**
   * Turns the events of one cached kind into keys: on each of its informers, a handler per
   * role it has here (primary, each `owns` and `watches` entry of it; a kind only read gets
   * one that just confirms the controller's writes).
   */
  #wire(kind: CachedKind, watches = this.#init.controller.watches): Unwire {
    const { controller: c, informers, gate, background } = this.#init;
    const key = kindKey(kind.resource);
    const keyed = { resource: kind.resource, kind: trackKey(kind.resource) };
    const handlers: ((ev: ObjectEvent<KubeObject>, info: InformerEventInfo) => void)[] = [];
    if (kind.roles.includes("primary")) {
      handlers.push((ev, info) => {
        const self = selfKey(ev);
        if (ev.type === "deleted") background.gone(self);
        else background.seen(self, ev.object as T);
        const refused = !passes(c.predicates, ev as ObjectEvent<T>);
        const priority = priorityOf(ev, info);
        gate.pass({ ...keyed, event: ev, keys: [self], cause: "primary", priority, refused });
      });
    }
    for (const owned of c.owns) {
      if (kindKey(owned) !== key) continue;
      handlers.push((ev, info) =>
        gate.pass(this.#keyed(keyed, ev, info, "owns", ownerKeys(c.resource, ev)))
      );
    }
    // Read kinds queue nothing, but their events confirm the writes this controller made.
    if (kind.roles.every((r) => r === "reads")) {
      handlers.push((ev, info) => gate.pass(this.#keyed(keyed, ev, info, "watches", NO_KEYS)));
    }
    for (const w of watches) {
      if (kindKey(w.resource) !== key) continue;
      handlers.push((ev, info) =>
        gate.pass(this.#keyed(keyed, ev, info, "watches", mappedKeys(w, informers.reader, ev)))
      );
    }
    const removers = informers.of(key).flatMap((inf) => handlers.map((h) => inf.onEvent(h)));
    return () => {
      for (const remove of removers) remove();
    };
  }

  #keyed(
    kind: Pick<KeyedEvent, "resource" | "kind">,
    event: ObjectEvent<KubeObject>,
    info: InformerEventInfo,
    cause: Cause,
    keys: Iterable<string>,
  ): KeyedEvent {
    return { ...kind, event, keys, cause, priority: priorityOf(event, info) };
  }

  #unwire(key: string): void {
    this.#wired.get(key)?.();
    this.#wired.delete(key);
  }
}
