/**
 * `Runnable`: anything the {@linkcode Manager} starts and stops — controllers, the informers,
 * leader election, the sharding coordinator, the probe, metrics and webhook servers — as
 * controller-runtime's `manager.Runnable`. Each belongs to a group, and the groups start in
 * the order of {@linkcode RUNNABLE_GROUPS} and stop in the reverse order.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";

/**
 * When a runnable runs, in start order:
 *
 * - `server`: the probe and metrics servers, first up and last down, so that a kubelet sees
 *   the process alive while it starts and while it drains;
 * - `webhook`: the webhook server, before the caches (a conversion webhook may be what lets
 *   the caches sync);
 * - `cache`: the informers, on every replica (warm standbys);
 * - `always`: what runs on every replica once the caches fill — leader election, the shard
 *   coordinator, start-up deadlines;
 * - `leader`: what needs the leader's Lease (or, when sharded, this replica's shards) —
 *   the controllers. It starts once elected and stops first.
 */
export type RunnableGroup = "server" | "webhook" | "cache" | "always" | "leader";

/** The groups in start order; they stop in the reverse order. */
export const RUNNABLE_GROUPS: readonly RunnableGroup[] = Object.freeze([
  "server",
  "webhook",
  "cache",
  "always",
  "leader",
]);

/** What a runnable's `start` gets from the manager. */
export interface RunnableContext {
  /** The manager's client. */
  readonly client: Client;
  /** Aborted when the manager begins to stop: a `start` still waiting should give up. */
  readonly signal: AbortSignal;
  /**
   * Reports a failure after `start` resolved (a server that died, a Lease lost): the manager
   * stops everything in order and `start()` rejects with `error`. The first report wins.
   *
   * @param error What failed; its message should name the fix.
   * @param options `urgent`: stop without waiting for in-flight reconciles (another replica
   * may already be writing).
   */
  fail(error: unknown, options?: { urgent?: boolean }): void;
}

/**
 * One thing the {@linkcode Manager} runs.
 *
 * @example A runnable that logs while it runs
 * ```ts
 * import type { Runnable } from "./runnable.ts";
 * const lines: string[] = [];
 * const heartbeat: Runnable = {
 *   name: "heartbeat",
 *   group: "always",
 *   start: () => void lines.push("started"),
 *   stop: () => void lines.push("stopped"),
 * };
 * if (heartbeat.group !== "always") throw new Error();
 * ```
 */
export interface Runnable {
  /** Names it in logs and errors. */
  readonly name: string;
  /** When it runs; see {@linkcode RunnableGroup}. */
  readonly group: RunnableGroup;
  /**
   * Starts it; resolves once it runs (a server listens, an informer is watching). A rejection
   * stops the manager, which then rejects with it; one caused by `ctx.signal` does not.
   */
  start(ctx: RunnableContext): void | Promise<void>;
  /**
   * Stops it; resolves once stopped. Called once, in reverse group order, for every runnable
   * added — also when its `start` did not finish or was never called (its group had not
   * started yet).
   *
   * @param reason Why: `"stop"` for a graceful stop, `"urgent"` when the manager stops
   * without waiting (leadership lost).
   */
  stop(reason: "stop" | "urgent"): void | Promise<void>;
}
