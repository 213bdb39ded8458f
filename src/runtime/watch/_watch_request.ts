// One open watch request, held by the state machine between steps. Events arrive in batches
// (every event one read of the stream completed); a step takes them from the batch without
// waiting, and waits — under a watchdog that only counts then — only for the next batch.
import type { RawWatchEvent, RawWatchOptions } from "../../client/types.ts";
import type { KubeObject } from "../../core/object.ts";
import { Watchdog } from "./_deadline.ts";
import { openRequest, STALLED, stalled, stallMs, type WatchContext } from "./_context.ts";

/** An open watch (a watch-list with `sync`), counted in the stats until closed. */
export class WatchRequest<T extends KubeObject> {
  readonly #ctx: WatchContext<T>;
  readonly #ctl = new AbortController();
  readonly #close: () => void;
  readonly #dog: Watchdog;
  readonly #it: AsyncIterator<RawWatchEvent<T>[]>;
  /** The batch being taken from, and the index of its next event. */
  #batch: RawWatchEvent<T>[] = [];
  #at = 0;
  readonly #started: number;
  /**
   * Rejects with the signal's reason once the request is aborted. One promise for the whole
   * request, raced against each event: an abort listener added and removed per event cost
   * more than decoding a small event.
   */
  readonly #aborted: Promise<never>;
  #events = 0;
  #connected = false;
  #closed = false;

  constructor(ctx: WatchContext<T>, from: { sync: true } | { resourceVersion?: string }) {
    this.#ctx = ctx;
    this.#started = ctx.clock.now();
    ctx.stats.watchRequests++;
    this.#close = openRequest(ctx, this.#ctl);
    const signal = this.#ctl.signal;
    this.#aborted = new Promise<never>((_, reject) =>
      signal.addEventListener("abort", () => reject(signal.reason), { once: true })
    );
    this.#aborted.catch(() => {});
    this.#dog = new Watchdog(ctx.clock, stallMs(ctx), () => this.#ctl.abort(STALLED));
    const sync = "sync" in from;
    const { namespace, labelSelector, fieldSelector, shardSelector, timeoutSeconds } = ctx.options;
    try {
      const options: RawWatchOptions = {
        namespace,
        labelSelector,
        fieldSelector,
        shardSelector,
        // A watch-list reads the latest state (consistent read from the watch cache).
        resourceVersion: sync ? undefined : from.resourceVersion,
        allowWatchBookmarks: true,
        sendInitialEvents: sync || undefined,
        resourceVersionMatch: sync ? "NotOlderThan" : undefined,
        timeoutSeconds: timeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
        signal: this.#ctl.signal,
        onConnected: () => this.#connected = true,
      };
      const client = ctx.client;
      this.#it = (client.watchEventBatches
        ? client.watchEventBatches<T>(ctx.resource, options)
        : singletons(client.watchEvents<T>(ctx.resource, options)))[Symbol.asyncIterator]();
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /**
   * Whether it worked: an event arrived, or the response headers did and the stream then
   * lasted a second. A connection attempt that fails slowly (a dead address, a TLS handshake
   * that hangs) did not work, however long it took.
   */
  get healthy(): boolean {
    return this.#events > 0 ||
      (this.#connected && this.#ctx.clock.now() - this.#started >= 1_000);
  }

  /**
   * The next event already received, without waiting: the rest of the last batch.
   *
   * @returns The event, or `undefined` when the batch is used up (see {@linkcode fill}).
   */
  take(): RawWatchEvent<T> | undefined {
    return this.#at < this.#batch.length ? this.#batch[this.#at++] : undefined;
  }

  /**
   * Waits for the next batch of events, for {@linkcode take} to hand out. The watchdog
   * counts from the call, and stops once the batch arrived: a consumer busy with it is no
   * stall.
   *
   * @returns `false` when the server ended the watch.
   * @throws {WatchError} `Stalled` when nothing arrived within the stall timeout.
   * @throws {unknown} Whatever the request failed with, or the stream signal's reason.
   */
  async fill(): Promise<boolean> {
    this.#dog.poke();
    try {
      const signal = this.#ctl.signal;
      if (signal.aborted) throw signal.reason;
      const pending = this.#it.next();
      pending.catch(() => {});
      const next = await Promise.race([pending, this.#aborted]);
      this.#dog.suspend();
      if (next.done) return false;
      this.#batch = next.value;
      this.#at = 0;
      this.#events += next.value.length;
      return true;
    } catch (err) {
      throw this.#dog.fired ? stalled(this.#ctx, "watch") : err;
    }
  }

  /**
   * The next event, from the batch at hand or else the next one.
   *
   * @returns The event, or `done` when the server ended the watch.
   * @throws {WatchError} `Stalled` when nothing arrived within the stall timeout.
   * @throws {unknown} Whatever the request failed with, or the stream signal's reason.
   */
  async next(): Promise<IteratorResult<RawWatchEvent<T>>> {
    let ev = this.take();
    while (ev === undefined) {
      if (!await this.fill()) return { done: true, value: undefined };
      ev = this.take();
    }
    return { done: false, value: ev };
  }

  /** Ends the request at once; closing again does nothing. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#dog.stop();
    this.#close();
    // Closing the client's iterator ends its request; the abort above already cut it.
    this.#it?.return?.().catch(() => {});
  }
}

/** The events of a client without batches, a batch each. */
async function* singletons<E>(events: AsyncIterable<E>): AsyncGenerator<E[]> {
  for await (const ev of events) yield [ev];
}
