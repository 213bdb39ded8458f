// Test support for the watch stream's unit tests (src/runtime/watch/): a stand-in
// WatchClient whose list and watch requests answer what the test scripts, and which records
// what it was asked. It sits in tests/ so that it does not ship.
import { ApiError } from "../src/client/errors/api_error.ts";
import type { ObjectList, RawWatchEvent } from "../src/client/types.ts";
import type { KubeObject } from "../src/core/object.ts";
import { resource } from "../src/core/resource.ts";
import type { WatchClient } from "../src/runtime/watch/types.ts";

export const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
export type CM = KubeObject;

/** A ConfigMap in namespace `ns` at `resourceVersion`. */
export function cm(name: string, resourceVersion: string): CM {
  return { metadata: { name, namespace: "ns", resourceVersion } } as CM;
}

/** An error as the client throws it for an HTTP status. */
export function apiError(code: number, verb = "watch"): ApiError {
  const reason = { 400: "BadRequest", 403: "Forbidden", 410: "Expired", 422: "Invalid" }[code] ??
    "InternalError";
  return ApiError.fromStatus(
    { verb, kind: "ConfigMap", apiVersion: "v1", plural: "configmaps", namespace: "ns" },
    code,
    { kind: "Status", status: "Failure", code, reason, message: `status ${code}` },
  );
}

/** A watch `ERROR` event with a Status of `code`. */
export function errorEvent(code: number): RawWatchEvent<CM> {
  return { type: "ERROR", object: { code, reason: code === 410 ? "Expired" : "InternalError" } };
}

/** A `BOOKMARK` event; `end` marks the end of a watch-list's initial events. */
export function bookmark(resourceVersion: string, end = false): RawWatchEvent<CM> {
  const annotations = end ? { "k8s.io/initial-events-end": "true" } : undefined;
  return { type: "BOOKMARK", object: { metadata: { resourceVersion, annotations } } as CM };
}

/** What one watch request answers: events, then `end` (the server closes it) or an error. */
export type WatchItem = RawWatchEvent<CM> | Error | "end";

/** The answer of one watch request, fed by the test; it waits while empty. */
export class Feed {
  readonly #items: WatchItem[];
  #wake: (() => void) | undefined;

  constructor(items: WatchItem[] = []) {
    this.#items = [...items];
  }

  /** Delivers more items to the request. */
  push(...items: WatchItem[]): void {
    this.#items.push(...items);
    this.#wake?.();
  }

  /** The request's events. */
  async *events(): AsyncGenerator<RawWatchEvent<CM>> {
    for (;;) {
      while (this.#items.length === 0) await new Promise<void>((r) => this.#wake = r);
      const item = this.#items.shift()!;
      if (item === "end") return;
      if (item instanceof Error) throw item;
      yield item;
    }
  }
}

/** One request the stand-in received. */
export interface Call {
  options: Record<string, unknown> & { signal?: AbortSignal; onConnected?: () => void };
}

/**
 * A stand-in client: each list request takes the next of `lists` (a page or an error),
 * each watch request the next of `watches`; when none is left, the request never answers.
 */
export function standIn(
  script: { lists?: (ObjectList<CM> | Error)[]; watches?: (Feed | WatchItem[])[] } = {},
) {
  const lists = [...(script.lists ?? [])];
  const watches = (script.watches ?? []).map((w) => w instanceof Feed ? w : new Feed(w));
  const listCalls: Call[] = [];
  const watchCalls: (Call & { feed: Feed })[] = [];
  let resets = 0;
  const client: WatchClient = {
    list<T>(_: unknown, options: Call["options"]) {
      listCalls.push({ options });
      const answer = lists.shift();
      if (answer === undefined) return new Promise<never>(() => {});
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer as T);
    },
    watchEvents<T>(_: unknown, options: Call["options"]) {
      const feed = watches.shift() ?? new Feed();
      watchCalls.push({ options, feed });
      options.onConnected?.();
      return feed.events() as AsyncIterable<RawWatchEvent<T>>;
    },
    resetConnections: () => void resets++,
  } as WatchClient;
  return {
    client,
    listCalls,
    watchCalls,
    /** Adds answers for later list requests. */
    lists: (...answers: (ObjectList<CM> | Error)[]) => void lists.push(...answers),
    /** Adds answers for later watch requests. */
    watches: (...answers: (Feed | WatchItem[])[]) =>
      void watches.push(...answers.map((w) => w instanceof Feed ? w : new Feed(w))),
    get resets() {
      return resets;
    },
  };
}

/** A list page (the last one when `cont` is absent). */
export function page(resourceVersion: string, items: CM[], cont?: string): ObjectList<CM> {
  return { metadata: { resourceVersion, continue: cont }, items };
}
