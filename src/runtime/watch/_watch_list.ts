// The streaming watch-list (KEP-3157) as watch() uses it: a watch with sendInitialEvents
// that streams the current objects as ADDED events and ends them with an annotated BOOKMARK.
import { ApiError } from "../../client/errors/api_error.ts";
import type { KubeObject } from "../../core/object.ts";
import { objectKey } from "../../core/object_key.ts";

/** The annotation on the BOOKMARK that ends the initial events. */
export const INITIAL_EVENTS_END = "k8s.io/initial-events-end";

/** Whether a BOOKMARK's object marks the end of the initial events. */
export function isInitialEventsEnd(obj: KubeObject): boolean {
  return obj.metadata?.annotations?.[INITIAL_EVENTS_END] === "true";
}

/**
 * Whether the server refused the watch-list request itself, as servers without the
 * `WatchList` feature do (422 Invalid: "sendInitialEvents is forbidden ..."; older ones
 * reject `resourceVersionMatch` on a watch). Worth remembering: asking again cannot help.
 */
export function isWatchListRejected(err: unknown): boolean {
  return err instanceof ApiError && (err.code === 400 || err.code === 422);
}

/**
 * The objects of the initial events. The server sends only ADDED events before the end
 * bookmark, so they are kept in a plain array, in the order sent; should a server ever
 * interleave MODIFIED or DELETED events, the set is keyed like the store from then on and
 * stays right.
 */
export class InitialEvents<T extends KubeObject> {
  readonly #added: T[] = [];
  #keyed: Map<string, T> | undefined;

  /** Applies one event received before the end bookmark. */
  apply(type: "ADDED" | "MODIFIED" | "DELETED", obj: T): void {
    if (type === "ADDED" && !this.#keyed) {
      this.#added.push(obj);
      return;
    }
    if (!this.#keyed) {
      this.#keyed = new Map();
      for (const o of this.#added) this.#keyed.set(objectKey(o), o);
    }
    if (type === "DELETED") this.#keyed.delete(objectKey(obj));
    else this.#keyed.set(objectKey(obj), obj);
  }

  /** The objects, in the order the server first sent them. */
  objects(): T[] {
    return this.#keyed ? [...this.#keyed.values()] : this.#added;
  }
}
