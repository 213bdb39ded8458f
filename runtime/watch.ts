/**
 * `watch()`: one resilient list-and-watch stream per kind and query, as kube-rs's `watcher`.
 * It lists, watches from the list's resourceVersion, follows bookmarks, resumes after a
 * dropped connection, relists on 410 Gone, backs off with jitter and detects stalls. It yields
 * {@linkcode WatchEvent}s: an {@linkcode ObjectEvent} (`added`, `modified`, `deleted`) or a
 * stream event (`relisted`, `bookmark`, `error`). Everything above it in the runtime — the
 * informer's cache, the controller's sources — is a function over this stream.
 *
 * Errors: what the stream cannot recover from is a {@linkcode WatchError} naming the kind
 * and query.
 *
 * @example A stand-in client: an empty list, then watches that deliver nothing
 * ```ts
 * import { watch } from "./watch.ts";
 * import { resource } from "../core.ts";
 *
 * const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
 * const client = {
 *   list: () => Promise.resolve({ metadata: { resourceVersion: "7" }, items: [] }),
 *   async *watchEvents() {},
 * };
 * const stream = watch(ConfigMap, { client });
 * for await (const ev of stream) {
 *   if (ev.type === "relisted") break; // leaving the loop closes the stream
 * }
 * if (stream.stats.lists !== 1 || stream.stats.resourceVersion !== "7") throw new Error();
 * ```
 *
 * @module
 */
export {
  type BackoffOptions,
  type ObjectEvent,
  watch,
  type WatchClient,
  type WatchEvent,
  type WatchOptions,
  type WatchQuery,
  type WatchStats,
  WatchStream,
} from "../src/runtime/watch/watch.ts";
export { WatchError, type WatchErrorInit } from "../src/runtime/watch/watch_error.ts";
