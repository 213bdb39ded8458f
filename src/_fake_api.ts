// An in-memory stand-in for the API server's list and watch, for unit tests of watch()
// and informer(): resourceVersions, an event history that resumed watches replay,
// compaction (410 Gone), paging, scripted failures, and counts of open watches.
import { ApiError, ConnectionError, type Status } from "./api_error.ts";
import type { ObjectList, RawWatchEvent } from "./client_types.ts";
import type { KubeObject } from "./object.ts";
import type { Resource } from "./resource.ts";
import { objectKey } from "./store.ts";
import type { WatchClient } from "./watch.ts";

type Item<T> = RawWatchEvent<T> | { end: true } | { err: unknown };

interface Watcher<T> {
  queue: Item<T>[];
  wake?: () => void;
  namespace?: string;
}

/** A fake list/watch server holding objects of any kind in one keyspace. */
export class FakeApi<T extends KubeObject = KubeObject> implements WatchClient {
  readonly objects = new Map<string, T>();
  readonly history: { rv: number; event: RawWatchEvent<T> }[] = [];
  readonly listCalls: Record<string, unknown>[] = [];
  readonly watchCalls: Record<string, unknown>[] = [];
  /** Errors thrown by the next list calls, in order. */
  readonly failLists: unknown[] = [];
  /** Errors thrown by the next watch calls, in order. */
  readonly failWatches: unknown[] = [];
  rv = 100;
  compactedRv = 0;
  openWatches = 0;
  maxOpenWatches = 0;
  #watchers = new Set<Watcher<T>>();

  static gone(): ApiError {
    const status: Status = { code: 410, reason: "Expired", message: "too old resource version" };
    return ApiError.fromStatus(
      { verb: "watch", kind: "X", apiVersion: "v1", plural: "xs" },
      410,
      status,
    );
  }

  static apiError(code: number, reason: string, message: string): ApiError {
    return ApiError.fromStatus(
      { verb: "list", kind: "ConfigMap", apiVersion: "v1", plural: "configmaps" },
      code,
      { code, reason, message, kind: "Status", details: { kind: "configmaps" } },
    );
  }

  static refused(): ConnectionError {
    return new ConnectionError("https://127.0.0.1:1", "list", new TypeError("Connection refused"));
  }

  put(obj: T): T {
    const key = objectKey(obj);
    const type = this.objects.has(key) ? "MODIFIED" : "ADDED";
    const stored = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.rv) } };
    this.objects.set(key, stored);
    this.#emit({ type, object: stored });
    return stored;
  }

  remove(key: string): void {
    const old = this.objects.get(key);
    if (!old) return;
    this.objects.delete(key);
    const object = { ...old, metadata: { ...old.metadata, resourceVersion: String(++this.rv) } };
    this.#emit({ type: "DELETED", object });
  }

  /** Sends a bookmark at the current resourceVersion to every open watch. */
  bookmark(): void {
    const ev = { type: "BOOKMARK", object: { metadata: { resourceVersion: String(this.rv) } } };
    for (const w of this.#watchers) this.#push(w, ev as RawWatchEvent<T>);
  }

  /** Sends an ERROR event to every open watch. */
  errorEvent(status: Status): void {
    for (const w of this.#watchers) this.#push(w, { type: "ERROR", object: status });
  }

  /** Ends every open watch cleanly, as a server timeout does. */
  endWatches(): void {
    for (const w of this.#watchers) this.#push(w, { end: true });
  }

  /** Breaks every open watch with an error, as a dropped connection does. */
  breakWatches(
    err: unknown = new ConnectionError("https://127.0.0.1:1", "watch", new Error("reset")),
  ): void {
    for (const w of this.#watchers) this.#push(w, { err });
  }

  /** Forgets history: watches from an older resourceVersion get 410 Gone. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history.length = 0;
  }

  list<U extends KubeObject>(
    _res: Resource<U>,
    options: { namespace?: string; limit?: number; continue?: string },
  ): Promise<ObjectList<U>> {
    this.listCalls.push({ ...options });
    const fail = this.failLists.shift();
    if (fail) return Promise.reject(fail);
    const all = [...this.objects.values()]
      .filter((o) => !options.namespace || o.metadata.namespace === options.namespace)
      .sort((a, b) => objectKey(a).localeCompare(objectKey(b)));
    const start = options.continue ? Number(options.continue.split(":")[1]) : 0;
    const rv = options.continue ? options.continue.split(":")[0] : String(this.rv);
    const end = options.limit ? start + options.limit : all.length;
    const items = all.slice(start, end) as unknown as U[];
    const cont = end < all.length ? `${rv}:${end}` : undefined;
    return Promise.resolve({ metadata: { resourceVersion: rv, continue: cont }, items });
  }

  async *watchEvents<U extends KubeObject>(
    _res: Resource<U>,
    options: { namespace?: string; resourceVersion?: string; signal?: AbortSignal },
  ): AsyncGenerator<RawWatchEvent<U>> {
    this.watchCalls.push({ ...options, signal: undefined });
    const fail = this.failWatches.shift();
    if (fail) throw fail;
    const from = Number(options.resourceVersion ?? 0);
    if (from < this.compactedRv) throw FakeApi.gone();
    const w: Watcher<T> = { queue: [], namespace: options.namespace };
    for (const h of this.history) {
      if (h.rv > from && this.#matches(w, h.event)) w.queue.push(h.event);
    }
    this.#watchers.add(w);
    this.openWatches++;
    this.maxOpenWatches = Math.max(this.maxOpenWatches, this.openWatches);
    const signal = options.signal;
    try {
      for (;;) {
        while (w.queue.length === 0) {
          signal?.throwIfAborted();
          await new Promise<void>((resolve, reject) => {
            w.wake = resolve;
            signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
          });
        }
        const item = w.queue.shift()!;
        if ("end" in item) return;
        if ("err" in item) throw item.err;
        yield item as unknown as RawWatchEvent<U>;
      }
    } finally {
      this.#watchers.delete(w);
      this.openWatches--;
    }
  }

  #matches(w: Watcher<T>, ev: RawWatchEvent<T>): boolean {
    if (!w.namespace || ev.type === "ERROR" || ev.type === "BOOKMARK") return true;
    return ev.object.metadata.namespace === w.namespace;
  }

  #emit(event: RawWatchEvent<T>): void {
    this.history.push({ rv: this.rv, event });
    for (const w of this.#watchers) if (this.#matches(w, event)) this.#push(w, event);
  }

  #push(w: Watcher<T>, item: Item<T>): void {
    w.queue.push(item);
    w.wake?.();
  }
}
