/**
 * `Background`: the per-object tasks of a running controller — its timers (`every`) and
 * daemons (`daemon`), started for each cached primary once the workers run and stopped when
 * the object leaves the cache or the controller stops, and what they report to metrics.
 * `timers.ts` declares them and says what is promised; the controller's runner feeds this from
 * its primary events and asks `hold` before it reconciles a key.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";
import type { KubeObject } from "../../core/object.ts";
import { parseObjectKey } from "../../core/object_key.ts";
import type { Clock } from "../../util/clock.ts";
import type { Logger } from "../../util/log.ts";
import type { CacheReader } from "../cache/reader.ts";
import type { BackgroundContext, Daemon, Timer } from "./timers.ts";

/** One run of a timer or daemon, for metrics. */
export interface BackgroundSample {
  /** The controller. */
  controller: string;
  /** The primary's key. */
  key: string;
  /** A timer (`every`) or a daemon. */
  kind: "timer" | "daemon";
  /** Its name. */
  name: string;
  /**
   * `success` (a daemon that ended, also when its signal aborted), `error` (it threw; a daemon
   * then restarts), `skipped` (a timer's tick while its key was being reconciled).
   */
  result: "success" | "error" | "skipped";
  /** How long it ran, in seconds (0 when skipped). */
  seconds: number;
}

/** The metrics hooks of timers and daemons (part of the controller's metrics hooks). */
export interface BackgroundMetrics {
  /** A timer or daemon run ended (or a timer's tick was skipped). */
  background?(sample: BackgroundSample): void;
  /** A daemon started (`+1`) or ended (`-1`). */
  daemonsRunning?(controller: string, daemon: string, delta: 1 | -1): void;
}

/** What {@linkcode Background} needs of the controller's runner. */
export interface BackgroundOptions<T extends KubeObject> {
  /** The controller's name, for logs and metrics. */
  controller: string;
  /** Its timers. */
  timers: readonly Timer<T>[];
  /** Its daemons. */
  daemons: readonly Daemon<T>[];
  /** The time source of intervals and backoffs. */
  clock: Clock;
  /** The controller's logger. */
  log: Logger;
  /** The client handed to the functions. */
  client: Client;
  /** Metrics hooks. */
  metrics?: BackgroundMetrics;
  /** The cached primary of a key. */
  get(key: string): T | undefined;
  /** Whether a reconcile of the key is running. */
  reconciling(key: string): boolean;
  /** The cache, its default namespace set. */
  cache(namespace: string | undefined): CacheReader;
  /** A number in [0, 1) for the jitter. */
  random?: () => number;
}

/**
 * Timers and daemons of every cached primary.
 *
 * @typeParam T The primary object type.
 */
export class Background<T extends KubeObject> {
  readonly #o: BackgroundOptions<T>;
  // Per key: what aborts its tasks, the tasks running, and the object as last seen.
  readonly #keys = new Map<
    string,
    { abort: AbortController; tasks: Promise<void>[]; obj: T | undefined }
  >();
  // Keys whose timer call is running, and the promise of its end.
  readonly #timerRuns = new Map<string, Promise<void>>();
  readonly #stop = new AbortController();
  #started = false;

  /**
   * Creates the tasks' owner; nothing runs before `start`.
   *
   * @param options The timers, daemons and what they need of the runner.
   */
  constructor(options: BackgroundOptions<T>) {
    this.#o = options;
  }

  /** Whether there is anything to run. */
  get empty(): boolean {
    return !this.#o.timers.length && !this.#o.daemons.length;
  }

  /** The workers run: start the tasks of every key cached now. */
  start(keys: Iterable<string>): void {
    if (this.#started || this.#stop.signal.aborted) return;
    this.#started = true;
    for (const key of keys) this.seen(key, this.#o.get(key));
  }

  /** The key's object is cached (added, or modified): start its tasks unless they run. */
  seen(key: string, obj?: T): void {
    const known = this.#keys.get(key);
    if (known) return void (known.obj = obj ?? known.obj);
    if (!this.#started || this.#stop.signal.aborted || this.empty) return;
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, this.#stop.signal]);
    const tasks = [
      ...this.#o.timers.map((t) => this.#timer(key, t, signal)),
      ...this.#o.daemons.map((d) => this.#daemon(key, d, signal)),
    ];
    this.#keys.set(key, { abort, tasks, obj: obj ?? this.#o.get(key) });
  }

  /** The key's object left the cache: abort its tasks. */
  gone(key: string): void {
    const k = this.#keys.get(key);
    if (!k) return;
    this.#keys.delete(key);
    k.abort.abort(new DOMException(`Object "${key}" was deleted`, "AbortError"));
  }

  /**
   * Objects leave this replica without being deleted (their shard moves to another replica):
   * aborts the tasks of those matching, as last seen, and resolves once those ended.
   */
  async leave(matches: (obj: T) => boolean, reason: string): Promise<void> {
    const ended: Promise<void>[] = [];
    for (const [key, k] of this.#keys) {
      if (!k.obj || !matches(k.obj)) continue;
      this.#keys.delete(key);
      k.abort.abort(new DOMException(reason, "AbortError"));
      ended.push(...k.tasks);
    }
    await Promise.all(ended);
  }

  /** What a reconcile of `key` waits for first: the timer call running for it, if any. */
  hold(key: string): Promise<void> | undefined {
    return this.#timerRuns.get(key);
  }

  /** Aborts every task; resolves once they all ended or `timeoutMs` passed (then `false`). */
  async stop(timeoutMs: number, reason: string): Promise<boolean> {
    this.#stop.abort(new DOMException(reason, "AbortError"));
    const all = [...this.#keys.values()].flatMap((k) => k.tasks);
    this.#keys.clear();
    if (!all.length) return true;
    const timeout = new AbortController();
    const timedOut = this.#o.clock.sleep(timeoutMs, timeout.signal).then(() => false, () => false);
    const ended = Promise.all(all).then(() => true);
    const ok = await Promise.race([ended, timedOut]);
    timeout.abort();
    return ok;
  }

  #ctx(key: string, name: string, signal: AbortSignal): BackgroundContext<T> {
    const namespace = parseObjectKey(key).namespace;
    return {
      key,
      signal,
      log: this.#o.log.with({
        key,
        namespace: namespace ?? "",
        name: parseObjectKey(key).name,
        task: name,
      }),
      client: this.#o.client,
      cache: this.#o.cache(namespace),
      current: () => this.#o.get(key),
    };
  }

  #sample(
    key: string,
    kind: BackgroundSample["kind"],
    name: string,
    result: BackgroundSample["result"],
    seconds = 0,
  ): void {
    this.#o.metrics?.background?.({
      controller: this.#o.controller,
      key,
      kind,
      name,
      result,
      seconds,
    });
  }

  async #timer(key: string, timer: Timer<T>, signal: AbortSignal): Promise<void> {
    const o = this.#o;
    const random = o.random ?? Math.random;
    const ctx = this.#ctx(key, timer.name, signal);
    for (;;) {
      const ms = timer.ms * (1 + timer.jitter * (2 * random() - 1));
      try {
        await o.clock.sleep(ms, signal);
      } catch {
        return;
      }
      const obj = o.get(key);
      if (signal.aborted || !obj) return;
      if (o.reconciling(key)) {
        ctx.log.debug("Timer {timer} of {key} skipped: a reconcile of it runs", {
          timer: timer.name,
          key,
        });
        this.#sample(key, "timer", timer.name, "skipped");
        continue;
      }
      const started = performance.now();
      const run = (async () => {
        try {
          await timer.fn(structuredClone(obj), ctx);
          this.#sample(key, "timer", timer.name, "success", (performance.now() - started) / 1000);
        } catch (err) {
          if (signal.aborted) return;
          ctx.log.error("Timer {timer} of {key} failed: {error}", {
            timer: timer.name,
            key,
            error: err instanceof Error ? err.message : String(err),
          });
          this.#sample(key, "timer", timer.name, "error", (performance.now() - started) / 1000);
        }
      })();
      this.#timerRuns.set(key, run);
      await run;
      if (this.#timerRuns.get(key) === run) this.#timerRuns.delete(key);
    }
  }

  async #daemon(key: string, d: Daemon<T>, signal: AbortSignal): Promise<void> {
    const o = this.#o;
    const ctx = this.#ctx(key, d.name, signal);
    let backoff = d.backoffMs;
    for (let attempt = 1;; attempt++) {
      const obj = o.get(key);
      if (signal.aborted || !obj) return;
      ctx.log.info("Daemon {daemon} of {key} started", { daemon: d.name, key, attempt });
      this.#o.metrics?.daemonsRunning?.(o.controller, d.name, 1);
      const started = performance.now();
      try {
        await d.fn(structuredClone(obj), ctx);
        const seconds = (performance.now() - started) / 1000;
        this.#sample(key, "daemon", d.name, "success", seconds);
        if (signal.aborted) {
          ctx.log.info("Daemon {daemon} of {key} ended: {why}", {
            daemon: d.name,
            key,
            why: reasonOf(signal),
          });
        } else ctx.log.info("Daemon {daemon} of {key} returned", { daemon: d.name, key });
        return;
      } catch (err) {
        const seconds = (performance.now() - started) / 1000;
        if (signal.aborted) {
          this.#sample(key, "daemon", d.name, "success", seconds);
          ctx.log.info("Daemon {daemon} of {key} ended: {why}", {
            daemon: d.name,
            key,
            why: reasonOf(signal),
          });
          return;
        }
        this.#sample(key, "daemon", d.name, "error", seconds);
        ctx.log.error("Daemon {daemon} of {key} failed, restarting in {backoffMs} ms: {error}", {
          daemon: d.name,
          key,
          backoffMs: backoff,
          error: err instanceof Error ? err.message : String(err),
        });
      } finally {
        this.#o.metrics?.daemonsRunning?.(o.controller, d.name, -1);
      }
      try {
        await o.clock.sleep(backoff, signal);
      } catch {
        return;
      }
      backoff = Math.min(backoff * 2, d.maxBackoffMs);
    }
  }
}

function reasonOf(signal: AbortSignal): string {
  const r = signal.reason;
  return r instanceof Error ? r.message : String(r);
}
