/**
 * `watch()`: one resilient stream of typed events for one kind and query, in the manner of
 * kube-rs's `watcher` and client-go's reflector.
 *
 * ## Flow
 *
 * 1. Sync: list in pages (`limit`/`continue`) and yield `relisted` with every object and
 *    the list's `resourceVersion`. With `initialSync: "watchList"`, sync instead over one
 *    streaming watch-list request (`sendInitialEvents=true`,
 *    `resourceVersionMatch=NotOlderThan`, bookmarks on): the server streams every current
 *    object as an `ADDED` event from its watch cache and ends them with a `BOOKMARK`
 *    annotated `k8s.io/initial-events-end: "true"`; the objects received until then are
 *    yielded as one `relisted` event with the bookmark's `resourceVersion`, and the same
 *    request goes on as the watch of step 2. When the server refuses watch-lists (400/422,
 *    e.g. the `WatchList` feature is off) the stream lists in pages for the rest of its life;
 *    a watch-list that fails in any other way before its end bookmark is retried once as a
 *    paged list at once, as client-go's reflector does.
 * 2. Watch from that `resourceVersion` with bookmarks, yielding `added`/`modified`/
 *    `deleted` and `bookmark`, tracking the `resourceVersion` of every event.
 * 3. When the server ends the watch (its `timeoutSeconds`, 5–10 minutes, random per
 *    request) or the connection drops, watch again from the last `resourceVersion`.
 * 4. When the server answers 410 Gone (HTTP or as a watch `ERROR` event, also during the
 *    initial events), sync again (1).
 * 5. On failure, wait with exponential backoff and jitter and retry the step that failed.
 *
 * ## Guarantees
 *
 * - At most one list or watch request is open per stream at any time.
 * - Between two `relisted` events, the events seen apply every change exactly once, in
 *   order; a `relisted` event replaces the consumer's whole view (objects absent from it
 *   were deleted meanwhile).
 * - A watch that delivers neither an event nor a bookmark within `stallTimeoutMs` is
 *   aborted and restarted; the same deadline bounds each list page, and the gap between
 *   two initial events of a watch-list.
 * - Both ways of syncing yield the same events: one `relisted` with the whole set, then
 *   live events from its `resourceVersion`.
 * - Failures are logged (LogTape category `["kubeno", "watch"]`) and yielded as `error`
 *   events once per change of state, not once per retry; recovery is logged once.
 * - Aborting `signal` or leaving the `for await` loop closes the open request at once and
 *   ends the stream without an error.
 *
 * ## Errors
 *
 * Transient failures (unreachable server, 5xx, 429, dropped or stalled connections) are
 * retried forever with backoff. Persistent ones (401, 403, 404 for an unknown resource,
 * 400 for a bad selector) throw a {@linkcode WatchError} that ends the stream, unless
 * `retryPersistent` is set: then they are yielded as `error` events and retried too.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";
import { realClock } from "../../util/clock.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { Backoff } from "./_backoff.ts";
import { toWatchError } from "./_classify.ts";
import { initialStats, watchContext } from "./_context.ts";
import { steps, syncState } from "./_state.ts";
import { withBackoff } from "./_stream_backoff.ts";
import type { WatchClient, WatchEvent, WatchOptions, WatchStats } from "./types.ts";

export type {
  ObjectEvent,
  WatchClient,
  WatchEvent,
  WatchOptions,
  WatchQuery,
  WatchStats,
} from "./types.ts";
export type { BackoffOptions } from "./_backoff.ts";
export type { ObjectList, RawWatchEvent, ShardInfo } from "../../client/types.ts";

/**
 * The `AsyncIterable` that {@linkcode watch} returns, with live {@linkcode WatchStats}.
 * It can be iterated once.
 *
 * @typeParam T The object type of the resource.
 *
 * @example Reading stats after the first list
 * ```ts
 * import { watch } from "./watch.ts";
 * import { resource } from "../../core/resource.ts";
 * const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
 * // A stand-in client: an empty list, and watches that never deliver anything.
 * const client = {
 *   list: () => Promise.resolve({ metadata: { resourceVersion: "7" }, items: [] }),
 *   async *watchEvents() {},
 * };
 * const stream = watch(ConfigMap, { client });
 * for await (const ev of stream) {
 *   if (ev.type === "relisted") break; // leaving the loop closes the stream
 * }
 * const { lists, resourceVersion, state } = stream.stats;
 * if (lists !== 1 || resourceVersion !== "7" || state !== "stopped") throw new Error();
 * ```
 */
export class WatchStream<T extends KubeObject> implements AsyncIterable<WatchEvent<T>> {
  readonly #res: Resource<T>;
  readonly #opts: WatchOptions;
  readonly #stats: WatchStats;
  #iterated = false;

  /**
   * Prefer {@linkcode watch}.
   *
   * @param resource The kind to watch.
   * @param options Query, client, timing and retry options.
   * @throws {RangeError} When `initialSync` is neither `"watchList"` nor `"list"`.
   */
  constructor(resource: Resource<T>, options: WatchOptions = {}) {
    this.#res = resource;
    this.#opts = options;
    const initialSync = options.initialSync ?? "list";
    if (initialSync !== "watchList" && initialSync !== "list") {
      throw new RangeError(
        `Cannot watch ${resource.kind}: initialSync must be "watchList" or "list", got "${initialSync}"`,
      );
    }
    this.#stats = initialStats(initialSync);
  }

  /**
   * A snapshot of the stream's counters and state.
   *
   * @returns The stats.
   */
  get stats(): Readonly<WatchStats> {
    return { ...this.#stats };
  }

  /**
   * Starts the stream.
   *
   * @returns The event iterator.
   * @throws {TypeError} When the stream is iterated a second time.
   */
  [Symbol.asyncIterator](): AsyncIterator<WatchEvent<T>> {
    if (this.#iterated) {
      throw new TypeError("Cannot iterate a watch stream twice: call watch() again");
    }
    this.#iterated = true;
    return this.#run();
  }

  // The state machine (_state.ts) steps through list, watch-list and watch requests; the
  // backoff adapter around it waits after each failed step.
  async *#run(): AsyncGenerator<WatchEvent<T>> {
    const opts = this.#opts;
    const clock = opts.clock ?? realClock;
    const backoff = new Backoff(opts.backoff ?? {}, clock);
    let client: WatchClient;
    let owned: Client | undefined;
    try {
      client = await (opts.client ?? (owned = await defaultClient()));
    } catch (err) {
      throw toWatchError(err, "list", this.#res, opts, true);
    }
    const ctx = watchContext(this.#res, opts, client, clock, this.#stats);
    try {
      yield* withBackoff(steps(ctx, syncState(ctx)), {
        backoff,
        clock,
        signal: opts.signal,
        retryPersistent: opts.retryPersistent,
        stats: this.#stats,
      });
    } finally {
      this.#stats.state = "stopped";
      owned?.close();
    }
  }
}

async function defaultClient(): Promise<Client> {
  const { createClient } = await import("../../client/client.ts");
  return await createClient();
}

/**
 * Lists and then watches one kind, forever: a resilient, typed event stream.
 * See the module docs for flow, guarantees and errors.
 *
 * @typeParam T The object type of the resource.
 * @param resource The kind to watch, e.g. `ConfigMap`.
 * @param options Namespace, selectors, client, `signal`, timing and retry options.
 * @returns A stream to iterate once with `for await`.
 * @throws {RangeError} When `initialSync` is neither `"watchList"` nor `"list"`.
 * @throws {WatchError} While iterating: a persistent failure (unless `retryPersistent`).
 *
 * @example Print changes to ConfigMaps in one namespace
 * ```ts ignore — needs a live API server to list and watch
 * import { watch } from "./watch.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 *
 * for await (const ev of watch(ConfigMap, { namespace: "default", signal: AbortSignal.timeout(60_000) })) {
 *   if (ev.type === "relisted") console.log(`${ev.objects.length} ConfigMaps`);
 *   else if (ev.type === "added" || ev.type === "modified" || ev.type === "deleted") {
 *     console.log(ev.type, ev.object.metadata.name);
 *   }
 * }
 * ```
 */
export function watch<T extends KubeObject>(
  resource: Resource<T>,
  options: WatchOptions = {},
): WatchStream<T> {
  return new WatchStream(resource, options);
}
