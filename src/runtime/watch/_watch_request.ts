// One open watch request, held by the state machine between steps: it takes one event per
// step, under a watchdog that only counts while the stream waits for the server.
import type { RawWatchEvent } from "../../client/types.ts";
import type { KubeObject } from "../../core/object.ts";
import { Watchdog } from "./_deadline.ts";
import { openRequest, STALLED, stalled, stallMs, type WatchContext } from "./_context.ts";

/** An open watch (a watch-list with `sync`), counted in the stats until closed. */
export class WatchRequest<T extends KubeObject> {
  readonly #ctx: WatchContext<T>;
  readonly #ctl = new AbortController();
  readonly #close: () => void;
  readonly #dog: Watchdog;
  readonly #it: AsyncIterator<RawWatchEvent<T>>;
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
      this.#it = ctx.client.watchEvents(ctx.resource, {
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
      })[Symbol.asyncIterator]();
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
   * The next event, or `done` when the server ended the watch. The watchdog counts from the
   * call, and stops once the event arrived: a consumer busy with it is no stall.
   *
   * @throws {WatchError} `Stalled` when nothing arrived within the stall timeout.
   * @throws {unknown} Whatever the request failed with, or the stream signal's reason.
   */
  async next(): Promise<IteratorResult<RawWatchEvent<T>>> {
    this.#dog.poke();
    try {
      const signal = this.#ctl.signal;
      if (signal.aborted) throw signal.reason;
      const pending = this.#it.next();
      pending.catch(() => {});
      const next = await Promise.race([pending, this.#aborted]);
      if (!next.done) this.#events++;
      this.#dog.suspend();
      return next;
    } catch (err) {
      throw this.#dog.fired ? stalled(this.#ctx, "watch") : err;
    }
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
