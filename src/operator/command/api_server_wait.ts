// Waiting out an API server that is down or not ready yet, for the operator program's commands.
//
// A control-plane upgrade or a crashed kube-apiserver is routine: the server refuses
// connections for a few seconds, then answers 503 ("the request has been made before all known
// HTTP paths have been installed") until it is ready. A command that exits on the first of those
// turns into a container restart with the kubelet's back-off (10 s, 20 s, 40 s ... 5 min), so
// `run` and `install` retry them with back-off until a deadline instead, as controller-runtime's
// caches retry until `CacheSyncTimeout`. What only a person can fix (401, 403, a kind that is
// not installed, a bad request) is not retried here: the caller decides.
import { ApiError, ConnectionError, isCertificateRejected } from "../../client/errors/api_error.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import { getLogger } from "../../util/log.ts";
import { KubenoError } from "../../util/error.ts";

const log = getLogger(["kubeno", "operator", "startup"]);

/**
 * Thrown when the API server stayed unreachable or not ready until the deadline. `cause` is
 * the last failure, whose hint (e.g. "check that the cluster is running") `describeError`
 * appends.
 */
export class ApiServerUnavailableError extends KubenoError {
  /**
   * @param message The one-line message.
   * @param options `cause`: the last failure.
   */
  constructor(message: string, options: ErrorOptions) {
    super(message, options);
    this.name = "ApiServerUnavailableError";
  }
}

/** Options of {@linkcode ApiServerWait}. */
export interface ApiServerWaitOptions {
  /** How long, from construction, failures are retried before giving up. */
  timeoutMs: number;
  /** The flag that sets `timeoutMs`, named in the error, e.g. `--startup-timeout`. */
  flag: string;
  /** Stops waiting; `run` then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The API server's URL, named when it does not answer at all. */
  server?: string;
  /**
   * Time source.
   * @default realClock
   */
  clock?: Clock;
  /**
   * First retry delay; it doubles per failure up to `maxDelayMs`, shortened by up to half at
   * random so that replicas that failed together do not retry together.
   * @default 500
   */
  initialDelayMs?: number;
  /**
   * Longest retry delay: bounds how long after the API server returns the next try comes.
   * @default 4_000
   */
  maxDelayMs?: number;
  /**
   * Longest wait for one answer; a server that accepts connections but does not answer counts
   * as unavailable.
   * @default 15_000
   */
  attemptTimeoutMs?: number;
  /** Called with `true` when a failure starts a wait and `false` when the server answers. */
  onWaiting?(waiting: boolean): void;
}

/**
 * Whether a failed request should be retried because the API server is unreachable, overloaded
 * or not ready yet: connection failures and timeouts, 429 and 5xx.
 *
 * @param err What the request threw.
 * @returns `true` when waiting can help.
 */
export function isUnavailable(err: unknown): boolean {
  // A refused certificate is a configuration error: waiting cannot fix it.
  if (isCertificateRejected(err)) return false;
  if (err instanceof ConnectionError) return true;
  return err instanceof ApiError && (err.code === 429 || err.code >= 500);
}

/**
 * Retries requests while the API server is unavailable (see {@linkcode isUnavailable}), with
 * back-off, until one shared deadline. It logs once per change of state — when a wait starts,
 * when the reason changes (refused connections, then 503 while the server starts), and when
 * the server answers — and at debug level for every retry.
 */
export class ApiServerWait {
  readonly #o: ApiServerWaitOptions;
  #lastFailure: unknown;
  readonly #clock: Clock;
  readonly #deadline: number;
  readonly #started: number;
  #waitingSince: number | undefined;
  #state: string | undefined;
  #failures = 0;

  /** @param options Deadline, flag name, signal and back-off. */
  constructor(options: ApiServerWaitOptions) {
    this.#o = options;
    this.#clock = options.clock ?? realClock;
    this.#started = this.#clock.now();
    this.#deadline = this.#started + options.timeoutMs;
  }

  /** Whether the last request failed and is being retried. */
  get waiting(): boolean {
    return this.#waitingSince !== undefined;
  }

  /** Milliseconds left before the deadline (never negative). */
  get remainingMs(): number {
    return Math.max(0, this.#deadline - this.#clock.now());
  }

  /**
   * Runs `attempt` until it succeeds, retrying while the API server is unavailable.
   *
   * @param attempt One try; pass its signal to the request.
   * @param retryAlso Makes other failures retryable too, e.g. a 403 while the server reports
   * it is not ready; returns a short description of the state, or `undefined` to give up.
   * @returns What `attempt` returned.
   * @throws {ApiServerUnavailableError} When the deadline passes first.
   * @throws The signal's reason when it aborts, or the first failure that is not retryable.
   */
  async run<T>(
    attempt: (signal: AbortSignal) => Promise<T>,
    retryAlso?: (err: unknown, signal: AbortSignal) => Promise<string | undefined>,
  ): Promise<T> {
    const outer = this.#o.signal;
    for (;;) {
      outer?.throwIfAborted();
      const remaining = this.remainingMs;
      const timeoutMs = Math.min(this.#o.attemptTimeoutMs ?? 15_000, Math.max(remaining, 1));
      const timeout = new AbortController();
      const timer = this.#clock.setTimeout(() => timeout.abort(NO_ANSWER), timeoutMs);
      const signal = outer ? AbortSignal.any([outer, timeout.signal]) : timeout.signal;
      let failure: unknown;
      let state: string | undefined;
      try {
        const result = await attempt(signal);
        this.#answered();
        return result;
      } catch (err) {
        outer?.throwIfAborted();
        // An attempt the deadline cut short says less than the failure before it (which names
        // the server and why): report that one.
        const cutShort = timeoutMs < (this.#o.attemptTimeoutMs ?? 15_000);
        failure = !timeout.signal.aborted
          ? err
          : cutShort && this.#lastFailure !== undefined
          ? this.#lastFailure
          : new Error(
            `no answer from ${this.#o.server ? `"${this.#o.server}"` : "the API server"} within ${
              seconds(Math.max(timeoutMs, 100))
            }`,
            { cause: err },
          );
        this.#lastFailure = failure;
        state = timeout.signal.aborted || isUnavailable(err)
          ? describeState(failure)
          : await retryAlso?.(err, signal).catch(() => undefined);
        if (state === undefined) throw err;
      } finally {
        this.#clock.clearTimeout(timer);
      }
      if (this.remainingMs <= 0) {
        const message = failure instanceof Error ? failure.message : String(failure);
        throw new ApiServerUnavailableError(
          `Gave up after waiting ${
            seconds(this.#clock.now() - this.#started)
          } for the Kubernetes API server (${this.#o.flag}=${
            seconds(this.#o.timeoutMs)
          }): ${message}`,
          { cause: failure },
        );
      }
      const delay = Math.min(this.#nextDelay(), this.remainingMs);
      this.#report(state, failure, delay);
      await this.#clock.sleep(delay, outer);
    }
  }

  #nextDelay(): number {
    const initial = this.#o.initialDelayMs ?? 500;
    const max = this.#o.maxDelayMs ?? 4_000;
    const base = Math.min(max, initial * 2 ** this.#failures++);
    return Math.round(base * (1 - 0.5 * Math.random()));
  }

  #report(state: string, failure: unknown, delayMs: number): void {
    const error = failure instanceof Error ? failure.message : String(failure);
    if (this.#waitingSince === undefined) {
      this.#waitingSince = this.#clock.now();
      this.#o.onWaiting?.(true);
    }
    if (state === this.#state) {
      log.debug("Still waiting for the Kubernetes API server ({state}); next try in {delayMs} ms", {
        state,
        delayMs,
        error,
      });
      return;
    }
    this.#state = state;
    log.warn(
      "Waiting for the Kubernetes API server ({state}): {error}; retrying with back-off for up to {remaining} more",
      { state, error, remaining: seconds(this.remainingMs) },
    );
  }

  #answered(): void {
    this.#failures = 0;
    if (this.#waitingSince === undefined) return;
    const waitedMs = this.#clock.now() - this.#waitingSince;
    this.#waitingSince = undefined;
    this.#state = undefined;
    log.info("The Kubernetes API server answered after {waitedMs} ms of waiting", { waitedMs });
    this.#o.onWaiting?.(false);
  }
}

const NO_ANSWER = new DOMException("No answer in time", "TimeoutError");

/** `unreachable`, `503 ServiceUnavailable`, `no answer`: what a log line's state names. */
function describeState(err: unknown): string {
  if (err instanceof ApiError) return `${err.code} ${err.reason}`;
  if (err instanceof ConnectionError) return "unreachable";
  return "no answer";
}

/** `2s`, `1.5s`, `2m`, `2m30s`. */
export function seconds(ms: number): string {
  const s = Math.round(ms / 100) / 10;
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  const rest = Math.round(s - m * 60);
  return rest ? `${m}m${rest}s` : `${m}m`;
}
