// Small helpers for requests that must give up promptly: racing a promise against an
// AbortSignal, and a watchdog that fires when nothing happened for a while.
import type { Clock, TimerId } from "../../util/clock.ts";

/**
 * Settles like `promise`, or rejects with `signal.reason` as soon as `signal` aborts, even
 * when the promise itself never notices the abort.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/**
 * Calls `onFire` once when `poke()` has not been called for `ms`. While suspended (the
 * consumer is busy with an event) it never fires. Uses one timer that re-arms itself
 * rather than one timer per poke.
 */
export class Watchdog {
  #clock: Pick<Clock, "now" | "setTimeout" | "clearTimeout">;
  #ms: number;
  #onFire: () => void;
  #last: number;
  #timer: TimerId | undefined;
  #suspended = false;
  #fired = false;

  constructor(
    clock: Pick<Clock, "now" | "setTimeout" | "clearTimeout">,
    ms: number,
    onFire: () => void,
  ) {
    this.#clock = clock;
    this.#ms = ms;
    this.#onFire = onFire;
    this.#last = clock.now();
    this.#arm(ms);
  }

  /** True once the watchdog has fired. */
  get fired(): boolean {
    return this.#fired;
  }

  /** Something happened: restart the deadline and leave suspension. */
  poke(): void {
    this.#last = this.#clock.now();
    this.#suspended = false;
  }

  /** Stop counting until the next `poke()`. */
  suspend(): void {
    this.#suspended = true;
  }

  /** Stop for good. */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#suspended = true;
  }

  #arm(ms: number): void {
    this.#timer = this.#clock.setTimeout(() => this.#check(), ms);
  }

  #check(): void {
    this.#timer = undefined;
    const elapsed = this.#clock.now() - this.#last;
    if (this.#suspended) {
      // Re-check later; the deadline restarts when the consumer pokes again.
      this.#arm(this.#ms);
    } else if (elapsed >= this.#ms) {
      this.#fired = true;
      this.#onFire();
    } else {
      this.#arm(this.#ms - elapsed);
    }
  }
}
