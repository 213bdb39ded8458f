/**
 * External sources: reconciles asked for from outside the cluster's watch events — a webhook
 * from another system, a message queue, another controller, a file that changed. The
 * equivalent of kube-rs's `Controller::reconcile_on` / `reconcile_all_on` and of
 * controller-runtime's `source.Channel`. They are entries of a controller's `sources`, beside
 * its timers and daemons.
 *
 * ## Flow
 *
 * An external source wraps any `AsyncIterable`. Once the controller's workers run (after its
 * caches synced, and on the leader only), the runtime reads the iterable: each item of
 * {@linkcode reconcileOn} is a primary's key (`namespace/name`, or `{ namespace, name }`) put
 * in the work queue; each item of {@linkcode reconcileAllOn} queues every cached primary. When
 * the controller stops, it stops reading and calls the iterator's `return()`.
 *
 * ## Guarantees
 *
 * - Keys are deduplicated by the work queue: a key pushed many times before a worker takes
 *   it is reconciled once; pushed while it is being reconciled, once more after.
 * - A key whose object is not in the cache is dropped when a worker takes it (as for every
 *   key: only cached primaries are reconciled).
 *
 * ## Caveats
 *
 * - Items are read only while this replica leads; what a standby's iterable yields waits
 *   there (an iterable is single-consumer).
 * - An iterable that throws or ends is not read again; the error is logged.
 *
 * @module
 */
import { objectKey, type ObjectName } from "../../core/object_key.ts";

/**
 * A source of reconciles outside the cluster, an entry of `sources`: see
 * {@linkcode reconcileOn}, {@linkcode reconcileAllOn}.
 */
export interface ExternalSource {
  /** Tells the entries of `sources` apart. */
  readonly type: "external";
  /** What an item reconciles: the primary it names (`keys`), or every primary (`all`). */
  readonly reconciles: "keys" | "all";
  /** Where the items come from. */
  readonly items: AsyncIterable<unknown>;
}

/**
 * Reconciles the primaries an async iterable names, as they come.
 *
 * @param source Keys (`namespace/name`, `name` for a cluster-scoped kind) or names with a
 * namespace.
 * @returns The source, for `reconcile(kind, { sources: [...] })`.
 * @throws {TypeError} When `source` is not async-iterable.
 *
 * @example Reconciling what a queue names
 * ```ts
 * import { reconcile } from "../controller/reconcile.ts";
 * import { reconcileOn } from "./external.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * async function* fromQueue() {
 *   yield "default/settings";
 *   yield { namespace: "default", name: "other" };
 * }
 * const controller = reconcile(ConfigMap, {
 *   sources: [reconcileOn(fromQueue())],
 *   reconcile: (cm, ctx) => ctx.log.info("Reconciled {key}", { key: ctx.key }),
 * });
 * if (controller.external?.[0].reconciles !== "keys") throw new Error();
 * ```
 */
export function reconcileOn(
  source: AsyncIterable<string | { namespace?: string; name: string }>,
): ExternalSource {
  return Object.freeze({
    type: "external",
    reconciles: "keys",
    items: check(source, "reconcileOn"),
  });
}

/**
 * Reconciles every cached primary each time an async iterable yields, e.g. after a
 * credential rotated or a configuration file changed. The keys wait behind real changes.
 *
 * @param source Any async iterable; its items are ignored.
 * @returns The source, for `reconcile(kind, { sources: [...] })`.
 * @throws {TypeError} When `source` is not async-iterable.
 *
 * @example Reconciling everything when a file changes
 * ```ts ignore — watches a file until the process ends
 * import { reconcile } from "../controller/reconcile.ts";
 * import { reconcileAllOn } from "./external.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * const controller = reconcile(ConfigMap, {
 *   sources: [reconcileAllOn(Deno.watchFs("/etc/myapp/config.yaml"))],
 *   reconcile: (cm, ctx) => ctx.log.info("Reconciled {key}", { key: ctx.key }),
 * });
 * ```
 */
export function reconcileAllOn(source: AsyncIterable<unknown>): ExternalSource {
  return Object.freeze({
    type: "external",
    reconciles: "all",
    items: check(source, "reconcileAllOn"),
  });
}

function check<T>(source: AsyncIterable<T>, fn: string): AsyncIterable<T> {
  if (typeof (source as Partial<AsyncIterable<T>>)?.[Symbol.asyncIterator] !== "function") {
    throw new TypeError(`Cannot make an external source with ${fn}(): it is not async-iterable`);
  }
  return source;
}

/** What {@linkcode runExternal} feeds. */
export interface ExternalSink {
  /** Queues one key. */
  enqueue(key: string): void;
  /** Queues every cached primary. */
  reconcileAll(): void;
  /** Told when the iterable throws. */
  failed(error: unknown): void;
}

/**
 * Reads an external source until it ends or `signal` aborts, feeding `sink`.
 *
 * @param source The external source.
 * @param sink Where keys go.
 * @param signal Stops reading (and calls the iterator's `return()`).
 * @returns A promise that resolves once reading stopped; it never rejects.
 */
export async function runExternal(
  source: ExternalSource,
  sink: ExternalSink,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) return;
  const it = source.items[Symbol.asyncIterator]();
  const stopped = new Promise<IteratorResult<unknown>>((resolve) =>
    signal.addEventListener("abort", () => resolve({ done: true, value: undefined }), {
      once: true,
    })
  );
  try {
    for (;;) {
      const next = await Promise.race([it.next(), stopped]);
      if (next.done || signal.aborted) break;
      if (source.reconciles === "all") {
        sink.reconcileAll();
        continue;
      }
      const item = next.value as string | ObjectName;
      const key = typeof item === "string" ? item : objectKey(item);
      if (key) sink.enqueue(key);
    }
  } catch (err) {
    sink.failed(err);
  } finally {
    // Not awaited: a generator suspended in `await` finishes its `return()` only later.
    void Promise.resolve(it.return?.()).catch(() => {});
  }
}
