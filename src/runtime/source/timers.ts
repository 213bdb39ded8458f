/**
 * Timers and daemons: work a controller does per primary object on time, not on watch events
 * — kopf's `@kopf.timer` and `@kopf.daemon`. `every(ms, fn)` calls `fn` on each cached primary
 * every `ms`; `daemon(fn)` runs one long task per cached primary until its signal aborts. Both
 * are entries of a controller's `sources`, beside its external sources (`reconcileOn`).
 * `background.ts` runs them.
 *
 * ## Flow
 *
 * Both start once the controller's workers run (after its caches synced, on the leader, or on
 * the replica that holds the object's shard), for every primary in the cache then and for
 * each one added later. A timer sleeps `ms` (± `jitter`), then calls its function with a copy
 * of the cached object; the next sleep starts when the call ended. A daemon is called once
 * with the object and a context whose `signal` aborts when the object is deleted (or leaves
 * this replica's shard), when the controller stops (leadership lost, shutdown). A daemon that
 * throws is logged, counted and started again after a backoff (1 s doubling to 5 min); one
 * that returns is done for that object.
 *
 * ## Guarantees
 *
 * - A timer's call and a reconcile of the same key never overlap: a tick that finds its key
 *   being reconciled is skipped (logged at debug, counted as `skipped`), and a reconcile of a
 *   key whose timer is running waits for it.
 * - One daemon of a kind per object at a time; a restart waits for the previous call to end.
 * - On stop, every daemon's signal aborts and the controller waits for them, up to the
 *   manager's shutdown timeout.
 *
 * ## Caveats
 *
 * - A daemon runs beside reconciles of its object: it must not write what the reconcile
 *   writes. Read the newest object with `ctx.current()`.
 * - Timers and daemons run on the leader (or the shard's holder) only: nothing runs on a
 *   standby.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Logger } from "../../util/log.ts";
import type { CacheReader } from "../cache/reader.ts";

/** What a timer or daemon function gets besides the object. */
export interface BackgroundContext<T extends KubeObject> {
  /** The object's key, `namespace/name`. */
  readonly key: string;
  /**
   * Aborts when the object is deleted or leaves this replica, or the controller stops
   * (leadership lost, shutdown). Pass it on to every wait and request.
   */
  readonly signal: AbortSignal;
  /** Logs with the controller, the key and the timer's or daemon's name. */
  readonly log: Logger;
  /** The manager's client. */
  readonly client: Client;
  /** The controller's cache, its default namespace the object's. */
  readonly cache: CacheReader;
  /**
   * The object as the cache holds it now (frozen), or `undefined` once deleted.
   *
   * @returns The object.
   */
  current(): T | undefined;
}

/** A timer, an entry of `sources`: see {@linkcode every}. */
export interface Timer<T extends KubeObject = any> {
  /** Tells the entries of `sources` apart. */
  readonly type: "timer";
  /** Its name, in logs and metrics. */
  readonly name: string;
  /** The interval in milliseconds. */
  readonly ms: number;
  /** The fraction of `ms` each interval varies by, at random, either way. */
  readonly jitter: number;
  /** The function. */
  readonly fn: (obj: T, ctx: BackgroundContext<T>) => void | Promise<void>;
}

/** Options of {@linkcode every}. */
export interface EveryOptions {
  /**
   * Its name, in logs and metrics.
   * @default `every-<ms>ms`
   */
  name?: string;
  /**
   * How much each interval varies, as a fraction of `ms` either way, so that timers of many
   * objects do not fire together.
   * @default 0.1
   */
  jitter?: number;
}

/**
 * A timer: calls `fn` on every cached primary every `ms` milliseconds, for
 * `reconcile(kind, { sources: [...] })`. See the module docs for the flow and guarantees.
 *
 * @typeParam T The primary object type, inferred from the controller.
 * @param ms The interval in milliseconds.
 * @param fn Called with a copy of the cached object and a context.
 * @param options Name and jitter.
 * @returns The timer.
 * @throws {RangeError} When `ms` is not a positive finite number or `jitter` is not in [0, 1).
 *
 * @example Checking each object every 30 seconds
 * ```ts
 * import { reconcile } from "../controller/reconcile.ts";
 * import { every } from "./timers.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * const controller = reconcile(ConfigMap, {
 *   sources: [every(30_000, (cm, ctx) => ctx.log.info("Still there: {key}", { key: ctx.key }))],
 *   reconcile() {},
 * });
 * if (controller.timers?.[0].name !== "every-30000ms") throw new Error();
 * ```
 */
export function every<T extends KubeObject>(
  ms: number,
  fn: Timer<T>["fn"],
  options: EveryOptions = {},
): Timer<T> {
  if (!(Number.isFinite(ms) && ms > 0)) {
    throw new RangeError(`Cannot make a timer: ms must be a positive finite number, got "${ms}"`);
  }
  const jitter = options.jitter ?? 0.1;
  if (!(jitter >= 0 && jitter < 1)) {
    throw new RangeError(`Cannot make a timer: jitter must be in [0, 1), got "${jitter}"`);
  }
  return Object.freeze({ type: "timer", name: options.name ?? `every-${ms}ms`, ms, jitter, fn });
}

/** A daemon, an entry of `sources`: see {@linkcode daemon}. */
export interface Daemon<T extends KubeObject = any> {
  /** Tells the entries of `sources` apart. */
  readonly type: "daemon";
  /** Its name, in logs and metrics. */
  readonly name: string;
  /** The first restart's delay in milliseconds; it doubles up to `maxBackoffMs`. */
  readonly backoffMs: number;
  /** The longest delay between restarts. */
  readonly maxBackoffMs: number;
  /** The function. */
  readonly fn: (obj: T, ctx: BackgroundContext<T>) => void | Promise<void>;
}

/** Options of {@linkcode daemon}. */
export interface DaemonOptions {
  /**
   * Its name, in logs and metrics.
   * @default "daemon"
   */
  name?: string;
  /**
   * The delay before the first restart after a throw; it doubles with each throw in a row.
   * @default 1000
   */
  backoffMs?: number;
  /**
   * The longest delay between restarts.
   * @default 300_000
   */
  maxBackoffMs?: number;
}

/**
 * A daemon: one long-running task per cached primary, for `reconcile(kind, { sources: [...] })`.
 * `ctx.signal` aborts when the object is deleted, the replica loses leadership or the shard,
 * or the operator shuts down; a throw restarts it with backoff. See the module docs.
 *
 * @typeParam T The primary object type, inferred from the controller.
 * @param fn The task; it should return soon after `ctx.signal` aborts.
 * @param options Name and restart backoff.
 * @returns The daemon.
 * @throws {RangeError} When a backoff is not a positive finite number.
 *
 * @example Polling an external system per object
 * ```ts
 * import { reconcile } from "../controller/reconcile.ts";
 * import { daemon } from "./timers.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * const controller = reconcile(ConfigMap, {
 *   sources: [daemon(async (cm, ctx) => {
 *     while (!ctx.signal.aborted) {
 *       ctx.log.info("Polling for {key}", { key: ctx.key });
 *       await new Promise<void>((resolve) => {
 *         const timer = setTimeout(resolve, 10_000);
 *         ctx.signal.addEventListener("abort", () => {
 *           clearTimeout(timer);
 *           resolve();
 *         }, { once: true });
 *       });
 *     }
 *   }, { name: "poller" })],
 *   reconcile() {},
 * });
 * if (controller.daemons?.[0].name !== "poller") throw new Error();
 * ```
 */
export function daemon<T extends KubeObject>(
  fn: Daemon<T>["fn"],
  options: DaemonOptions = {},
): Daemon<T> {
  const backoffMs = options.backoffMs ?? 1_000;
  const maxBackoffMs = options.maxBackoffMs ?? 300_000;
  for (const [name, v] of [["backoffMs", backoffMs], ["maxBackoffMs", maxBackoffMs]] as const) {
    if (!(Number.isFinite(v) && v > 0)) {
      throw new RangeError(
        `Cannot make a daemon: ${name} must be a positive finite number, got "${v}"`,
      );
    }
  }
  return Object.freeze({
    type: "daemon",
    name: options.name ?? "daemon",
    backoffMs,
    maxBackoffMs,
    fn,
  });
}
