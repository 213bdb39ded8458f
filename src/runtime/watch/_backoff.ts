// Exponential backoff with jitter for retrying list/watch requests, like client-go's
// reflector backoff manager: bounded, growing, and reset after a healthy period.
import type { Clock } from "../../util/clock.ts";

/** How a {@linkcode Backoff} grows; shared by `watch()` and `informer()` options. */
export interface BackoffOptions {
  /**
   * First delay in milliseconds.
   * @default 800
   */
  initialMs?: number;
  /**
   * Largest delay in milliseconds; no delay ever exceeds it.
   * @default 30_000
   */
  maxMs?: number;
  /**
   * Growth factor per consecutive failure.
   * @default 2
   */
  factor?: number;
  /**
   * Each delay is shortened by a random fraction up to this, so that many clients that
   * failed together do not retry together.
   * @default 0.5
   */
  jitter?: number;
  /**
   * A failure more than this many milliseconds after the previous one starts again from
   * `initialMs`.
   * @default 120_000
   */
  resetAfterMs?: number;
}

/** Stateful backoff: `next()` gives the delay before the next retry. */
export class Backoff {
  #initial: number;
  #max: number;
  #factor: number;
  #jitter: number;
  #resetAfter: number;
  #clock: Pick<Clock, "now">;
  #random: () => number;
  #failures = 0;
  #lastFailureAt = -Infinity;

  constructor(options: BackoffOptions, clock: Pick<Clock, "now">, random = Math.random) {
    this.#initial = options.initialMs ?? 800;
    this.#max = options.maxMs ?? 30_000;
    this.#factor = options.factor ?? 2;
    this.#jitter = options.jitter ?? 0.5;
    this.#resetAfter = options.resetAfterMs ?? 120_000;
    if (!(this.#initial > 0) || !(this.#max >= this.#initial) || !(this.#factor >= 1)) {
      throw new RangeError(
        `Cannot create backoff: need 0 < initialMs <= maxMs and factor >= 1, got initialMs "${this.#initial}", maxMs "${this.#max}", factor "${this.#factor}"`,
      );
    }
    if (!(this.#jitter >= 0 && this.#jitter < 1)) {
      throw new RangeError(
        `Cannot create backoff: jitter must be in [0, 1), got "${this.#jitter}"`,
      );
    }
    this.#clock = clock;
    this.#random = random;
  }

  /** Consecutive failures counted so far. */
  get failures(): number {
    return this.#failures;
  }

  /** Records a failure and returns how long to wait before retrying. */
  next(): number {
    const now = this.#clock.now();
    if (now - this.#lastFailureAt > this.#resetAfter) this.#failures = 0;
    this.#lastFailureAt = now;
    const base = Math.min(this.#max, this.#initial * this.#factor ** this.#failures);
    this.#failures++;
    return Math.round(base * (1 - this.#jitter * this.#random()));
  }

  /** Forgets past failures. */
  reset(): void {
    this.#failures = 0;
    this.#lastFailureAt = -Infinity;
  }
}
