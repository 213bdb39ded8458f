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
import { getLogger } from "../../util/log.ts";
import { ApiError } from "../../client/api_error.ts";
import type { Client } from "../../client/client.ts";
import type { ListPage, ObjectList, RawWatchEvent, ShardInfo } from "../../client/types.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { Backoff, type BackoffOptions } from "./_backoff.ts";
import { abortable, Watchdog } from "./_deadline.ts";
import { isExpired, toWatchError } from "./_classify.ts";
import { InitialEvents, isInitialEventsEnd, isWatchListRejected } from "./_watch_list.ts";
import { describeQuery, WatchError } from "./watch_error.ts";

export type { BackoffOptions } from "./_backoff.ts";
export type { ObjectList, RawWatchEvent, ShardInfo } from "../../client/types.ts";

const log = getLogger(["kubeno", "watch"]);

/**
 * A change to one object: kubeno's one event vocabulary. The watch stream yields it, the
 * informer applies it to its store and hands the same event (with `old` filled in) to its
 * handlers, and a controller's predicates judge it before a key is enqueued.
 */
export type ObjectEvent<T> =
  /** An object was created, or was first seen (by a resumed watch or a relist). */
  | { readonly type: "added"; readonly object: T }
  /**
   * An object changed. `old` is its previous state where the receiver keeps one: always
   * from an informer (and equal to `object` on a periodic resync), never from a bare watch.
   */
  | { readonly type: "modified"; readonly object: T; readonly old?: T }
  /** An object was deleted; `object` is its last known state. */
  | { readonly type: "deleted"; readonly object: T };

/** One event of a {@linkcode WatchStream}: an {@linkcode ObjectEvent} or a stream event. */
export type WatchEvent<T> =
  | ObjectEvent<T>
  /**
   * A fresh list replaced the whole view: objects absent from `objects` are gone. With a
   * `shardSelector`, `shardInfo` is the selector a paged list's server applied (absent when
   * the server ignored it, and after a watch-list, which carries no list metadata).
   */
  | { type: "relisted"; objects: T[]; resourceVersion: string; shardInfo?: ShardInfo }
  /** The server confirmed progress up to `resourceVersion` without a change. */
  | { type: "bookmark"; resourceVersion: string }
  /** The stream entered a failing state; it retries on its own. */
  | { type: "error"; error: WatchError };

/** The query part of a list or watch request. */
export interface WatchQuery {
  /** Only objects in this namespace; absent for all namespaces. */
  namespace?: string;
  /** Only objects whose labels match, e.g. `app=web`. */
  labelSelector?: string;
  /** Only objects whose fields match, e.g. `metadata.name=foo`. */
  fieldSelector?: string;
  /**
   * Only objects in these hash ranges (KEP-5866's `shardSelector`, e.g.
   * `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`); servers
   * without the `ShardedListAndWatch` feature ignore it and send every object.
   */
  shardSelector?: string;
}

/** What `watch()` needs of a client; kubeno's `Client` has it. */
export interface WatchClient {
  /** One list request (one page). */
  list<T extends KubeObject>(
    resource: Resource<T>,
    options: WatchQuery & { limit?: number; continue?: string; signal?: AbortSignal },
  ): Promise<ObjectList<T>>;
  /**
   * One list request (one page), read but not decoded, so that the next page can be on its
   * way while this one is decoded; `list` is used when absent.
   */
  listPage?<T extends KubeObject>(
    resource: Resource<T>,
    options: WatchQuery & { limit?: number; continue?: string; signal?: AbortSignal },
  ): Promise<ListPage<T>>;
  /** One watch request: ends when the server closes it, throws on non-2xx. */
  watchEvents<T extends KubeObject>(
    resource: Resource<T>,
    options: WatchQuery & {
      resourceVersion?: string;
      allowWatchBookmarks?: boolean;
      timeoutSeconds?: number;
      sendInitialEvents?: boolean;
      resourceVersionMatch?: "NotOlderThan";
      signal?: AbortSignal;
      /** Called when the response headers arrived; clients that cannot tell may omit it. */
      onConnected?: () => void;
    },
  ): AsyncIterable<RawWatchEvent<T>>;
  /**
   * Closes pooled connections so that the next request opens a new one. Called after a
   * stall: over HTTP/2 the restarted watch would otherwise share the dead connection.
   */
  resetConnections?(): void;
}

/** Options for {@linkcode watch}. */
export interface WatchOptions extends WatchQuery {
  /**
   * The client to list and watch with, or a promise of one.
   * @default a client from the default kubeconfig (`createClient()`), closed at the end
   */
  client?: WatchClient | Promise<WatchClient>;
  /** Stops the stream: the open request is aborted and iteration ends. */
  signal?: AbortSignal;
  /**
   * How to sync (first and after 410 Gone): `"list"` lists in pages; `"watchList"` streams
   * the objects over one watch request (KEP-3157, what client-go 1.35 does), falling back to
   * paged lists when the server refuses it. Paged lists are the default because they
   * measured faster and leaner here (10,000 ConfigMaps, interleaved runs on one cluster:
   * 231–340 against 442–546 ms, 3.7–4.0 against 8.1–8.8 KB RSS per object; BENCHMARKS.md):
   * each page is decoded while the next is on its way, whereas each streamed object passes
   * `JSON.parse` and the stream's layers alone.
   * @default "list"
   */
  initialSync?: "watchList" | "list";
  /**
   * Objects per list page; `0` lists in one request. Used by paged lists only. Larger than
   * client-go's 500: every page costs a round trip, and with 10,000 ConfigMaps 2,000 per page
   * synced in 368–378 ms against 473–576 ms with 500 (same run, same cluster).
   * @default 2000
   */
  pageSize?: number;
  /**
   * Restart a watch that delivered no event and no bookmark for this long; also the
   * deadline of each list page. The server sends a bookmark about every minute.
   * @default 300_000
   */
  stallTimeoutMs?: number;
  /**
   * Server-side timeout of each watch request, in seconds.
   * @default random between 300 and 600 per request, like client-go
   */
  timeoutSeconds?: number;
  /**
   * Retry delays.
   * @default 800 ms, doubling to 30 s, up to half shortened by jitter, reset after 2 min
   */
  backoff?: BackoffOptions;
  /**
   * Also retry persistent failures (403, 404, ...) instead of throwing, yielding them as
   * `error` events; informers do this, since RBAC or a CRD may be fixed later.
   * @default false
   */
  retryPersistent?: boolean;
  /**
   * Time source for backoff and the stall watchdog.
   * @default realClock
   */
  clock?: Clock;
}

/** Counters and state of a {@linkcode WatchStream}, for health checks and tests. */
export interface WatchStats {
  /**
   * What the stream is doing now; `listing` covers a sync by either way, until its
   * `relisted` event.
   */
  state: "idle" | "listing" | "watching" | "backoff" | "stopped";
  /**
   * How the next sync will be done: `list` by default; with `initialSync: "watchList"`,
   * `watchList` until the server refuses one, then `list`.
   */
  initialSync: "watchList" | "list";
  /**
   * The last `resourceVersion` seen (list, end bookmark, event or bookmark). The initial
   * events of a watch-list do not move it: it jumps to the end bookmark's.
   */
  resourceVersion: string | undefined;
  /** Clock time of the last list page, event or bookmark received. */
  lastEventAt: number | undefined;
  /** LIST requests sent, one per page; a watch-list sync sends none. */
  listRequests: number;
  /** Complete syncs (initial and after 410 Gone) by either way: `relisted` events yielded. */
  lists: number;
  /** Watch requests sent, watch-list requests included. */
  watchRequests: number;
  /** List or watch requests open now: never more than 1. */
  openRequests: number;
  /** The most requests that were ever open at once: never more than 1. */
  maxOpenRequests: number;
  /** Times the stall watchdog fired. */
  stalls: number;
  /** Failed attempts, each followed by a backoff delay. */
  failures: number;
  /** The current failure, cleared when the stream recovers. */
  error: WatchError | undefined;
}

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
  readonly #clock: Clock;
  readonly #stats: WatchStats = {
    state: "idle",
    initialSync: "list",
    resourceVersion: undefined,
    lastEventAt: undefined,
    listRequests: 0,
    lists: 0,
    watchRequests: 0,
    openRequests: 0,
    maxOpenRequests: 0,
    stalls: 0,
    failures: 0,
    error: undefined,
  };
  #iterated = false;
  // No sync yet, or the last resourceVersion expired: the next request must sync.
  #needSync = true;
  // Expired resourceVersions without a watch event in between: the second one backs off.
  #goneInARow = 0;

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
    this.#clock = options.clock ?? realClock;
    const initialSync = options.initialSync ?? "list";
    if (initialSync !== "watchList" && initialSync !== "list") {
      throw new RangeError(
        `Cannot watch ${resource.kind}: initialSync must be "watchList" or "list", got "${initialSync}"`,
      );
    }
    this.#stats.initialSync = initialSync;
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

  async *#run(): AsyncGenerator<WatchEvent<T>> {
    const outer = this.#opts.signal;
    const backoff = new Backoff(this.#opts.backoff ?? {}, this.#clock);
    const what = describeQuery(this.#res, this.#opts);
    let client: WatchClient;
    let owned: Client | undefined;
    try {
      client = await (this.#opts.client ?? (owned = await defaultClient()));
    } catch (err) {
      throw toWatchError(err, "list", this.#res, this.#opts, true);
    }
    // A watch-list that failed before its end bookmark is followed by one paged list.
    let listOnce = false;
    let phase: "list" | "watch" = "list";
    try {
      while (!outer?.aborted) {
        let failure: unknown;
        let watchList = false;
        try {
          if (this.#needSync && (listOnce || this.#stats.initialSync === "list")) {
            phase = "list";
            this.#stats.state = "listing";
            const { items, resourceVersion, shardInfo } = await this.#list(client);
            this.#needSync = false;
            listOnce = false;
            this.#progress(resourceVersion);
            this.#stats.lists++;
            yield {
              type: "relisted",
              objects: items,
              resourceVersion,
              ...(shardInfo ? { shardInfo } : {}),
            };
          }
          phase = "watch";
          watchList = this.#needSync;
          this.#stats.state = watchList ? "listing" : "watching";
          const ended = yield* this.#watchOnce(client, watchList);
          if (ended === "gone") {
            this.#needSync = true;
            if (++this.#goneInARow < 2) {
              log.info("Resource version of {what} expired; relisting", { what });
              continue;
            }
            failure = new WatchError(
              `Cannot watch ${what}: resourceVersion "${this.#stats.resourceVersion}" expired right after a list`,
              {
                resource: this.#res,
                namespace: this.#opts.namespace,
                persistent: false,
                code: 410,
                reason: "Expired",
              },
            );
          } else if (ended === "unfinished") {
            log.info(
              "Watch-list of {what} ended before its initial-events-end bookmark; listing in pages this time",
              { what },
            );
            listOnce = true;
            continue;
          } else if (ended === "healthy") {
            this.#goneInARow = 0;
            continue;
          } else {
            failure = new WatchError(
              `Cannot watch ${what}: the server closed the watch at once without an event`,
              {
                resource: this.#res,
                namespace: this.#opts.namespace,
                persistent: false,
                reason: "ShortWatch",
              },
            );
          }
        } catch (err) {
          if (outer?.aborted) return;
          if (watchList && this.#needSync && !isExpired(err)) {
            // Like client-go: making progress with a paged list beats retrying a watch-list.
            if (isWatchListRejected(err)) {
              this.#stats.initialSync = "list";
              log.warn("The server refused a watch-list of {what} ({error}); listing in pages", {
                what,
                error: err instanceof Error ? err.message : String(err),
              });
            } else {
              if (err instanceof WatchError && err.reason === "Stalled") {
                this.#stats.stalls++;
                client.resetConnections?.();
              }
              log.info("Watch-list of {what} failed: {error}; listing in pages this time", {
                what,
                error: err instanceof Error ? err.message : String(err),
              });
              listOnce = true;
            }
            continue;
          }
          if (isExpired(err) && (!this.#needSync || watchList)) {
            // Sync again in any case; at once the first time, after backoff when it repeats.
            this.#needSync = true;
            if (++this.#goneInARow < 2) {
              log.info("Resource version of {what} expired; relisting", { what });
              continue;
            }
          }
          failure = err;
        }
        const error = toWatchError(failure, phase, this.#res, this.#opts, false);
        this.#stats.failures++;
        if (error.reason === "Stalled") {
          this.#stats.stalls++;
          client.resetConnections?.();
        }
        if (error.persistent && !this.#opts.retryPersistent) {
          log.error("{message}", { message: error.message, error });
          this.#stats.error = error;
          throw error;
        }
        const delay = backoff.next();
        if (this.#report(error, delay)) yield { type: "error", error };
        this.#stats.state = "backoff";
        try {
          await this.#clock.sleep(delay, outer);
        } catch {
          return;
        }
      }
    } finally {
      this.#stats.state = "stopped";
      owned?.close();
    }
  }

  /**
   * Lists every page; restarts from the first page once when a `continue` token expires.
   * Each page is read whole before the next is requested (one request open at a time), but
   * decoded while the next one is on its way, when the client can read a page undecoded.
   */
  async #list(
    client: WatchClient,
  ): Promise<{ items: T[]; resourceVersion: string; shardInfo?: ShardInfo }> {
    const { namespace, labelSelector, fieldSelector, shardSelector } = this.#opts;
    const limit = this.#opts.pageSize ?? 2000;
    const fetchPage = (cont: string | undefined): InFlight<ListPage<T>> => {
      this.#stats.listRequests++;
      const cancel = new AbortController();
      const options = {
        namespace,
        labelSelector,
        fieldSelector,
        shardSelector,
        limit: limit > 0 ? limit : undefined,
        continue: cont,
      };
      const page = this.#request(
        (signal) =>
          client.listPage
            ? client.listPage(this.#res, { ...options, signal })
            : client.list(this.#res, { ...options, signal }).then(decoded),
        cancel.signal,
      );
      // Awaited below, or cancelled and settled when decoding the page before it failed.
      page.catch(() => {});
      return { page, cancel: () => (cancel.abort(CLOSED), page.then(() => {}, () => {})) };
    };
    const items: T[] = [];
    let cont: string | undefined;
    let restarted = false;
    let next = fetchPage(undefined);
    for (;;) {
      let page: ListPage<T>;
      try {
        page = await next.page;
      } catch (err) {
        if (cont === undefined || restarted || !isExpired(err)) throw err;
        log.info("List continue token of {what} expired; listing again from the first page", {
          what: describeQuery(this.#res, this.#opts),
        });
        restarted = true;
        cont = undefined;
        items.length = 0;
        next = fetchPage(undefined);
        continue;
      }
      let list = page.metadata ? undefined : page.decode();
      const meta = page.metadata ?? list!.metadata;
      cont = meta.continue || undefined;
      if (cont) next = fetchPage(cont);
      try {
        list ??= page.decode();
      } catch (err) {
        if (cont) await next.cancel();
        throw err;
      }
      for (const obj of list.items) {
        // List items carry no apiVersion/kind; watch events do. Make them alike.
        obj.apiVersion ??= this.#res.apiVersion;
        obj.kind ??= this.#res.kind;
        items.push(obj);
      }
      if (!cont) {
        const { resourceVersion, shardInfo } = list.metadata;
        return { items, resourceVersion: resourceVersion ?? "", shardInfo };
      }
    }
  }

  /** One request under the watchdog, aborted by the outer signal or `cancel`. */
  async #request<R>(send: (signal: AbortSignal) => Promise<R>, cancel?: AbortSignal): Promise<R> {
    const ctl = new AbortController();
    const stop = this.#open(ctl);
    const onCancel = () => ctl.abort(cancel!.reason);
    cancel?.addEventListener("abort", onCancel, { once: true });
    const dog = new Watchdog(this.#clock, this.#stallMs(), () => ctl.abort(STALLED));
    try {
      return await abortable(send(ctl.signal), ctl.signal);
    } catch (err) {
      throw dog.fired ? this.#stalled("list") : err;
    } finally {
      cancel?.removeEventListener("abort", onCancel);
      dog.stop();
      stop();
    }
  }

  /**
   * One watch request from the tracked resourceVersion, or with `sync` a watch-list that
   * first yields `relisted` at its end bookmark. Returns how it ended: `gone` (sync again),
   * `healthy` (resume at once), `short` (closed at once, back off) or `unfinished` (a
   * watch-list closed before its end bookmark).
   */
  async *#watchOnce(
    client: WatchClient,
    sync: boolean,
  ): AsyncGenerator<WatchEvent<T>, "gone" | "healthy" | "short" | "unfinished"> {
    const ctl = new AbortController();
    const stop = this.#open(ctl);
    const dog = new Watchdog(this.#clock, this.#stallMs(), () => ctl.abort(STALLED));
    const started = this.#clock.now();
    let events = 0;
    let connected = false;
    // Healthy means it worked: an event arrived, or the response headers did and the stream
    // then lasted a second. A connection attempt that fails slowly (a dead address, a TLS
    // handshake that hangs) is a failure that backs off, however long it took.
    const healthy = () => events > 0 || (connected && this.#clock.now() - started >= 1_000);
    // Until the end bookmark of a watch-list: the objects streamed so far.
    let initial = sync ? new InitialEvents<T>() : undefined;
    this.#stats.watchRequests++;
    const { namespace, labelSelector, fieldSelector, shardSelector } = this.#opts;
    const it = client.watchEvents(this.#res, {
      namespace,
      labelSelector,
      fieldSelector,
      shardSelector,
      // A watch-list reads the latest state (consistent read from the watch cache).
      resourceVersion: sync ? undefined : this.#stats.resourceVersion,
      allowWatchBookmarks: true,
      sendInitialEvents: sync || undefined,
      resourceVersionMatch: sync ? "NotOlderThan" : undefined,
      timeoutSeconds: this.#opts.timeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
      signal: ctl.signal,
      onConnected: () => connected = true,
    })[Symbol.asyncIterator]();
    try {
      for (;;) {
        let next: IteratorResult<RawWatchEvent<T>>;
        try {
          next = await abortable(it.next(), ctl.signal);
        } catch (err) {
          if (dog.fired) throw this.#stalled("watch");
          // A connection that worked and then broke is resumed at once, without backoff;
          // a watch-list that broke has nothing to resume from.
          if (
            !initial && !this.#opts.signal?.aborted && healthy() && !(err instanceof ApiError)
          ) {
            log.debug("Watch of {what} broke off: {error}; resuming", {
              what: describeQuery(this.#res, this.#opts),
              error: String(err),
            });
            return "healthy";
          }
          throw err;
        }
        if (next.done) {
          if (initial) return "unfinished";
          return healthy() ? "healthy" : "short";
        }
        events++;
        const ev = next.value;
        if (ev.type === "ERROR") {
          if (isExpired(ev.object)) return "gone";
          throw ApiError.fromStatus(
            {
              verb: "watch",
              kind: this.#res.kind,
              apiVersion: this.#res.apiVersion,
              plural: this.#res.plural,
              namespace,
            },
            ev.object.code ?? 500,
            ev.object,
          );
        }
        if (initial) {
          // Initial events carry their objects' own versions, not a point to resume from.
          this.#progress(undefined);
          if (ev.type !== "BOOKMARK") initial.apply(ev.type, ev.object);
          else if (isInitialEventsEnd(ev.object)) {
            const objects = initial.objects();
            initial = undefined;
            const resourceVersion = ev.object.metadata.resourceVersion ?? "";
            this.#progress(resourceVersion);
            this.#needSync = false;
            this.#stats.lists++;
            this.#stats.state = "watching";
            dog.suspend();
            yield { type: "relisted", objects, resourceVersion };
          }
          dog.poke();
          continue;
        }
        this.#progress(ev.object.metadata?.resourceVersion);
        this.#goneInARow = 0;
        dog.suspend();
        if (ev.type === "BOOKMARK") {
          yield { type: "bookmark", resourceVersion: ev.object.metadata.resourceVersion ?? "" };
        } else {
          const type = ev.type === "ADDED"
            ? "added"
            : ev.type === "MODIFIED"
            ? "modified"
            : "deleted";
          yield { type, object: ev.object };
        }
        dog.poke();
      }
    } finally {
      dog.stop();
      stop();
      // Closing the client's iterator ends its request; the abort above already cut it.
      it.return?.().catch(() => {});
    }
  }

  /** Counts an open request and links it to the outer signal; returns the closer. */
  #open(ctl: AbortController): () => void {
    const outer = this.#opts.signal;
    const onAbort = () => ctl.abort(outer!.reason);
    if (outer?.aborted) ctl.abort(outer.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    this.#stats.openRequests++;
    this.#stats.maxOpenRequests = Math.max(this.#stats.maxOpenRequests, this.#stats.openRequests);
    return () => {
      outer?.removeEventListener("abort", onAbort);
      ctl.abort(CLOSED);
      this.#stats.openRequests--;
    };
  }

  #stallMs(): number {
    return this.#opts.stallTimeoutMs ?? 300_000;
  }

  #stalled(phase: "list" | "watch"): WatchError {
    const ms = this.#stallMs();
    const what = describeQuery(this.#res, this.#opts);
    const nothing = phase === "list" ? "no list page" : "no event or bookmark";
    return new WatchError(`Cannot ${phase} ${what}: ${nothing} arrived within ${ms} ms (stalled)`, {
      resource: this.#res,
      namespace: this.#opts.namespace,
      persistent: false,
      reason: "Stalled",
    });
  }

  /** Something arrived: track its resourceVersion and leave a failing state. */
  #progress(resourceVersion: string | undefined): void {
    if (resourceVersion) this.#stats.resourceVersion = resourceVersion;
    this.#stats.lastEventAt = this.#clock.now();
    if (this.#stats.error) {
      log.info("Watch of {what} recovered after {failures} failed attempts", {
        what: describeQuery(this.#res, this.#opts),
        failures: this.#stats.failures,
      });
      this.#stats.error = undefined;
    }
  }

  /** Logs a failure once per change of state; returns whether it was a change. */
  #report(error: WatchError, delayMs: number): boolean {
    const prev = this.#stats.error;
    this.#stats.error = error;
    const same = prev !== undefined && prev.code === error.code && prev.reason === error.reason;
    const props = { message: error.message, delayMs, error };
    if (same) log.debug("{message}; retrying in {delayMs} ms", props);
    else log.warn("{message}; retrying with backoff, first in {delayMs} ms", props);
    return !same;
  }
}

async function defaultClient(): Promise<Client> {
  const { createClient } = await import("../../client/client.ts");
  return await createClient();
}

const STALLED = new DOMException("The watch stalled", "TimeoutError");
const CLOSED = new DOMException("The watch request was closed", "AbortError");

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

/** A request on its way, and how to call it off (settles once it has). */
interface InFlight<R> {
  page: Promise<R>;
  cancel(): Promise<void>;
}

/** A page decoded already, as a {@linkcode ListPage}. */
function decoded<T>(list: ObjectList<T>): ListPage<T> {
  return { metadata: list.metadata, decode: () => list };
}
