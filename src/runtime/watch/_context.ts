// What every step of a watch stream works with, and the bookkeeping its requests share:
// counting open requests, tracking progress, and naming a stall.
import { getLogger } from "../../util/log.ts";
import type { Clock } from "../../util/clock.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import type { WatchClient, WatchOptions, WatchStats } from "./types.ts";
import { describeQuery, WatchError } from "./watch_error.ts";

export const log = getLogger(["kubeno", "watch"]);

/** One stream's fixed inputs, and its stats, which the steps keep up to date. */
export interface WatchContext<T extends KubeObject> {
  readonly resource: Resource<T>;
  readonly options: WatchOptions;
  readonly client: WatchClient;
  readonly clock: Clock;
  readonly stats: WatchStats;
  /** The query as messages name it, e.g. `ConfigMap (v1) in namespace "x"`. */
  readonly what: string;
}

/** A context for `resource` and `options`, with fresh stats. */
export function watchContext<T extends KubeObject>(
  resource: Resource<T>,
  options: WatchOptions,
  client: WatchClient,
  clock: Clock,
  stats: WatchStats = initialStats(options.initialSync ?? "list"),
): WatchContext<T> {
  return { resource, options, client, clock, stats, what: describeQuery(resource, options) };
}

/** The stats of a stream that has not started. */
export function initialStats(initialSync: "watchList" | "list"): WatchStats {
  return {
    state: "idle",
    initialSync,
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
}

/** Why a request was aborted by the stream itself. */
export const STALLED = new DOMException("The watch stalled", "TimeoutError");
export const CLOSED = new DOMException("The watch request was closed", "AbortError");

/** Counts an open request and links it to the stream's signal; returns the closer. */
export function openRequest<T extends KubeObject>(
  ctx: WatchContext<T>,
  ctl: AbortController,
): () => void {
  const outer = ctx.options.signal;
  const onAbort = () => ctl.abort(outer!.reason);
  if (outer?.aborted) ctl.abort(outer.reason);
  outer?.addEventListener("abort", onAbort, { once: true });
  const stats = ctx.stats;
  stats.openRequests++;
  stats.maxOpenRequests = Math.max(stats.maxOpenRequests, stats.openRequests);
  return () => {
    outer?.removeEventListener("abort", onAbort);
    ctl.abort(CLOSED);
    stats.openRequests--;
  };
}

/**
 * Something arrived: track its resourceVersion and leave a failing state.
 *
 * @returns The tracked resourceVersion, which an empty one leaves as it was.
 */
export function progress<T extends KubeObject>(
  ctx: WatchContext<T>,
  resourceVersion: string | undefined,
): string | undefined {
  const stats = ctx.stats;
  if (resourceVersion) stats.resourceVersion = resourceVersion;
  stats.lastEventAt = ctx.clock.now();
  if (stats.error) {
    log.info("Watch of {what} recovered after {failures} failed attempts", {
      what: ctx.what,
      failures: stats.failures,
    });
    stats.error = undefined;
  }
  return stats.resourceVersion;
}

/** The deadline of a list page, and of the silence of a watch. */
export function stallMs<T extends KubeObject>(ctx: WatchContext<T>): number {
  return ctx.options.stallTimeoutMs ?? 300_000;
}

/** The error of a request the watchdog aborted. */
export function stalled<T extends KubeObject>(
  ctx: WatchContext<T>,
  phase: "list" | "watch",
): WatchError {
  const nothing = phase === "list" ? "no list page" : "no event or bookmark";
  return new WatchError(
    `Cannot ${phase} ${ctx.what}: ${nothing} arrived within ${stallMs(ctx)} ms (stalled)`,
    {
      resource: ctx.resource,
      namespace: ctx.options.namespace,
      persistent: false,
      reason: "Stalled",
    },
  );
}

/** Whether `err` is what {@linkcode stalled} makes. */
export function isStalled(err: unknown): boolean {
  return err instanceof WatchError && err.reason === "Stalled";
}
