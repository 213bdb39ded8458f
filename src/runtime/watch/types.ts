/**
 * The vocabulary of `watch()`: the events a watch stream yields, what it needs of a client,
 * its options and its stats. `watch.ts` re-exports every one of them; they live apart so
 * that the stream's private parts can use them without importing the stream.
 *
 * @module
 */
import type {
  ListPage,
  ObjectList,
  RawWatchEvent,
  RawWatchOptions,
  ShardInfo,
} from "../../client/types.ts";
import type { Clock } from "../../util/clock.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import type { BackoffOptions } from "./_backoff.ts";
import type { WatchError } from "./watch_error.ts";

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
    options: RawWatchOptions,
  ): AsyncIterable<RawWatchEvent<T>>;
  /**
   * One watch request as `watchEvents`, its events in batches (never empty): every event
   * one read of the stream completed. Used when present, so that the many initial events of
   * a watch-list are taken in a synchronous loop per batch rather than a promise each.
   */
  watchEventBatches?<T extends KubeObject>(
    resource: Resource<T>,
    options: RawWatchOptions,
  ): AsyncIterable<RawWatchEvent<T>[]>;
  /**
   * Closes pooled connections so that the next request opens a new one. Called after a
   * stall: the restarted watch would otherwise reuse a pooled connection on the dead path.
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
