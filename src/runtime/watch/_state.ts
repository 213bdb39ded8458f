// The state machine of a watch stream, in the manner of kube-rs's `watcher`: a state, and a
// step that does one thing (a paged list, opening a request, or taking one event from it)
// and returns the next state with at most one output. Backing off after a failed step is
// the `withBackoff` adapter's business, not the machine's.
import { ApiError } from "../../client/errors/api_error.ts";
import type { RawWatchEvent } from "../../client/types.ts";
import type { KubeObject } from "../../core/object.ts";
import { isExpired, toWatchError } from "./_classify.ts";
import { isStalled, log, progress, type WatchContext } from "./_context.ts";
import { listPages } from "./_list.ts";
import { InitialEvents, isInitialEventsEnd, isWatchListRejected } from "./_watch_list.ts";
import { WatchRequest } from "./_watch_request.ts";
import type { WatchEvent } from "./types.ts";
import { WatchError } from "./watch_error.ts";

/**
 * Where a stream stands, and so what its next step does. `expiredBefore`: a resourceVersion
 * expired and no watch event arrived since, so expiring again backs off rather than syncing
 * again at once (a server whose history keeps vanishing must not be relisted in a loop).
 */
export type WatchState<T extends KubeObject> =
  /** Sync by listing in pages: the next step lists them all and yields `relisted`. */
  | { readonly phase: "sync-list"; readonly expiredBefore: boolean }
  /** Sync by a watch-list: the next step opens it. */
  | { readonly phase: "sync-watch-list"; readonly expiredBefore: boolean }
  /**
   * A watch-list streams its initial events into `objects`; each step takes one batch of
   * them, and the end bookmark yields `relisted` and makes the same request the watch.
   */
  | {
    readonly phase: "initial-events";
    readonly request: WatchRequest<T>;
    readonly objects: InitialEvents<T>;
    readonly expiredBefore: boolean;
  }
  /** In sync up to `resourceVersion`: the next step opens a watch from it. */
  | {
    readonly phase: "watch";
    readonly resourceVersion: string | undefined;
    readonly expiredBefore: boolean;
  }
  /** A watch is open; each step takes one event from it, tracking its resourceVersion. */
  | {
    readonly phase: "watching";
    readonly request: WatchRequest<T>;
    readonly resourceVersion: string | undefined;
    readonly expiredBefore: boolean;
  };

/** A step failed with `error`; the next step should wait (see `withBackoff`). */
export interface Failed {
  readonly type: "failed";
  readonly error: WatchError;
}

/** What one step did: the state to step from next, and what to yield, if anything. */
export interface Step<T extends KubeObject> {
  readonly next: WatchState<T>;
  readonly output?: WatchEvent<T> | Failed;
}

/** The state a sync starts from: how the stream syncs now (paged, or a watch-list). */
export function syncState<T extends KubeObject>(
  ctx: WatchContext<T>,
  expiredBefore = false,
): WatchState<T> {
  const phase = ctx.stats.initialSync === "list" ? "sync-list" : "sync-watch-list";
  return { phase, expiredBefore };
}

/**
 * The machine as a stream: steps from `state` until the stream's signal aborts, yielding
 * the outputs; the request open at the end is closed.
 */
export async function* steps<T extends KubeObject>(
  ctx: WatchContext<T>,
  state: WatchState<T>,
): AsyncGenerator<WatchEvent<T> | Failed> {
  try {
    while (!ctx.options.signal?.aborted) {
      const { next, output } = await step(ctx, state);
      state = next;
      if (output) yield output;
    }
  } finally {
    settle(state);
  }
}

/**
 * One step from `state`. Never throws: a failure is routed by {@linkcode failed}, and after
 * the stream's signal aborted, the state returned holds no open request.
 */
export async function step<T extends KubeObject>(
  ctx: WatchContext<T>,
  state: WatchState<T>,
): Promise<Step<T>> {
  try {
    return await advance(ctx, state);
  } catch (err) {
    return failed(ctx, state, err);
  }
}

/** Does `state`'s step; throws whatever made it fail, for {@linkcode failed} to route. */
async function advance<T extends KubeObject>(
  ctx: WatchContext<T>,
  state: WatchState<T>,
): Promise<Step<T>> {
  const { expiredBefore } = state;
  switch (state.phase) {
    case "sync-list": {
      ctx.stats.state = "listing";
      const { items, resourceVersion, shardInfo } = await listPages(ctx);
      const tracked = progress(ctx, resourceVersion);
      ctx.stats.lists++;
      return {
        next: { phase: "watch", resourceVersion: tracked, expiredBefore },
        output: {
          type: "relisted",
          objects: items,
          resourceVersion,
          ...(shardInfo ? { shardInfo } : {}),
        },
      };
    }
    case "sync-watch-list": {
      ctx.stats.state = "listing";
      const request = new WatchRequest(ctx, { sync: true });
      const objects = new InitialEvents<T>();
      return { next: { phase: "initial-events", request, objects, expiredBefore } };
    }
    case "initial-events": {
      // Every event of the batch at hand in one synchronous loop: a watch-list streams tens
      // of thousands of them, and a promise each cost more than decoding them.
      const { request, objects } = state;
      let ev = request.take();
      if (ev === undefined) {
        if (!await request.fill()) {
          request.close();
          return pagedInstead(ctx, state);
        }
        ev = request.take()!;
      }
      // Initial events carry their objects' own versions, not a point to resume from.
      progress(ctx, undefined);
      for (; ev !== undefined; ev = request.take()) {
        if (ev.type === "ERROR") return errorEvent(ctx, state, ev);
        if (ev.type !== "BOOKMARK") {
          objects.apply(ev.type, ev.object);
          continue;
        }
        if (!isInitialEventsEnd(ev.object)) continue;
        const resourceVersion = ev.object.metadata.resourceVersion ?? "";
        const tracked = progress(ctx, resourceVersion);
        ctx.stats.lists++;
        ctx.stats.state = "watching";
        // Events after the bookmark stay in the request's batch, for the watch to take.
        return {
          next: { phase: "watching", request, resourceVersion: tracked, expiredBefore },
          output: { type: "relisted", objects: objects.objects(), resourceVersion },
        };
      }
      return { next: state };
    }
    case "watch": {
      ctx.stats.state = "watching";
      const request = new WatchRequest(ctx, { resourceVersion: state.resourceVersion });
      return { next: { ...state, phase: "watching", request } };
    }
    case "watching": {
      const next = await state.request.next();
      if (next.done) {
        state.request.close();
        if (!state.request.healthy) throw shortWatch(ctx);
        return { next: resume(state, false) };
      }
      const ev = next.value;
      if (ev.type === "ERROR") return errorEvent(ctx, state, ev);
      const resourceVersion = progress(ctx, ev.object.metadata?.resourceVersion);
      return {
        next: { ...state, resourceVersion, expiredBefore: false },
        output: ev.type === "BOOKMARK"
          ? { type: "bookmark", resourceVersion: ev.object.metadata.resourceVersion ?? "" }
          : { type: OBJECT_EVENT[ev.type], object: ev.object },
      };
    }
  }
}

const OBJECT_EVENT = { ADDED: "added", MODIFIED: "modified", DELETED: "deleted" } as const;

/** Where a failed step goes; every way a request can fail is routed here, and only here. */
function failed<T extends KubeObject>(
  ctx: WatchContext<T>,
  state: WatchState<T>,
  err: unknown,
): Step<T> {
  const retry = settle(state);
  if (ctx.options.signal?.aborted) return { next: retry };
  // A connection that worked and then broke (no status, no stall) is resumed at once,
  // without backoff; a watch-list that broke before its end bookmark has nothing to resume.
  const brokeOff = !(err instanceof ApiError || err instanceof WatchError);
  if (state.phase === "watching" && brokeOff && state.request.healthy) {
    log.debug("Watch of {what} broke off: {error}; resuming", {
      what: ctx.what,
      error: String(err),
    });
    return { next: resume(state, false) };
  }
  if (isStalled(err)) {
    ctx.stats.stalls++;
    // The restarted request would otherwise reuse a pooled connection on the dead path.
    ctx.client.resetConnections?.();
  }
  if (isExpired(err) && retry.phase !== "sync-list") return expired(ctx, retry, err);
  if (retry.phase === "sync-watch-list") return pagedInstead(ctx, retry, err);
  const phase = retry.phase === "sync-list" ? "list" : "watch";
  return {
    next: retry,
    output: { type: "failed", error: toWatchError(err, phase, ctx.resource, ctx.options, false) },
  };
}

/** An `ERROR` event: 410 Gone syncs again, any other ends the request as its status. */
function errorEvent<T extends KubeObject>(
  ctx: WatchContext<T>,
  state: WatchState<T>,
  ev: Extract<RawWatchEvent<T>, { type: "ERROR" }>,
): Step<T> {
  if (isExpired(ev.object)) return expired(ctx, settle(state));
  const { resource } = ctx;
  throw ApiError.fromStatus(
    {
      verb: "watch",
      kind: resource.kind,
      apiVersion: resource.apiVersion,
      plural: resource.plural,
      namespace: ctx.options.namespace,
    },
    ev.object.code ?? 500,
    ev.object,
  );
}

/**
 * The resourceVersion expired (410 Gone): sync again, at once the first time, and after
 * backoff when it expires again before a watch event arrived. `cause` is the HTTP error, if
 * the server answered one rather than an `ERROR` event.
 */
function expired<T extends KubeObject>(
  ctx: WatchContext<T>,
  state: WatchState<T>,
  cause?: unknown,
): Step<T> {
  const next = syncState(ctx, true);
  if (!state.expiredBefore) {
    log.info("Resource version of {what} expired; relisting", { what: ctx.what });
    return { next };
  }
  const error = cause !== undefined
    ? toWatchError(cause, "watch", ctx.resource, ctx.options, false)
    : new WatchError(
      `Cannot watch ${ctx.what}: resourceVersion "${ctx.stats.resourceVersion}" expired right after a list`,
      {
        resource: ctx.resource,
        namespace: ctx.options.namespace,
        persistent: false,
        code: 410,
        reason: "Expired",
      },
    );
  return { next, output: { type: "failed", error } };
}

/**
 * A watch-list failed before its end bookmark (`err`), or the server closed it then: sync
 * with a paged list instead, at once, as client-go's reflector does: making progress beats
 * retrying. A server that refused the watch-list itself is never asked for one again.
 */
function pagedInstead<T extends KubeObject>(
  ctx: WatchContext<T>,
  state: WatchState<T>,
  err?: unknown,
): Step<T> {
  const what = ctx.what;
  if (err === undefined) {
    log.info(
      "Watch-list of {what} ended before its initial-events-end bookmark; listing in pages this time",
      { what },
    );
  } else if (isWatchListRejected(err)) {
    ctx.stats.initialSync = "list";
    log.warn("The server refused a watch-list of {what} ({error}); listing in pages", {
      what,
      error: firstLine(err),
    });
  } else {
    log.info("Watch-list of {what} failed: {error}; listing in pages this time", {
      what,
      error: firstLine(err),
    });
  }
  return { next: { phase: "sync-list", expiredBefore: state.expiredBefore } };
}

/** The state that retries `state`'s step, with its request (if any) closed. */
function settle<T extends KubeObject>(state: WatchState<T>): WatchState<T> {
  switch (state.phase) {
    case "initial-events":
      state.request.close();
      return { phase: "sync-watch-list", expiredBefore: state.expiredBefore };
    case "watching":
      state.request.close();
      return resume(state, state.expiredBefore);
    default:
      return state;
  }
}

/** Watch again from where `state` got to. */
function resume<T extends KubeObject>(
  state: { resourceVersion: string | undefined },
  expiredBefore: boolean,
): WatchState<T> {
  return { phase: "watch", resourceVersion: state.resourceVersion, expiredBefore };
}

function shortWatch<T extends KubeObject>(ctx: WatchContext<T>): WatchError {
  return new WatchError(
    `Cannot watch ${ctx.what}: the server closed the watch at once without an event`,
    {
      resource: ctx.resource,
      namespace: ctx.options.namespace,
      persistent: false,
      reason: "ShortWatch",
    },
  );
}

function firstLine(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
