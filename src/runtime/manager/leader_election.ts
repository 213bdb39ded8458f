/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics, so that
 * of several replicas of an operator exactly one reconciles at a time.
 *
 * @module
 */

import { isConflict, isNotFound } from "../../client/errors/api_error.ts";
import type { Client } from "../../client/client.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import { Lease } from "../../core/kinds_cluster.ts";
import { getLogger } from "../../util/log.ts";
import { inSpan } from "../../util/trace.ts";
import { KubenoError } from "../../util/error.ts";

/** The part of {@linkcode Client} leader election uses: reads and writes of one Lease. */
export type LeaseClient = Pick<Client, "get" | "create" | "replace">;

/** Why {@linkcode LeaderElector.run} ended. */
export type LeaderElectionEnd =
  /** Renewing failed for `renewDeadlineMs`, or another holder took the lease. */
  | "lost"
  /** The signal aborted or {@linkcode LeaderElector.release} was called. */
  | "stopped";

/** Hooks that feed the `leader_election_master_status` metric. */
export interface LeaderElectionMetrics {
  /** Called with `true` on becoming leader and `false` on stopping. */
  leading(isLeader: boolean): void;
}

/** Options of {@linkcode leaderElector}. */
export interface LeaderElectorOptions {
  /** Reads and writes the Lease; needs get, create and update on `leases`. */
  client: LeaseClient;
  /** The Lease's name, usually the operator's name. */
  name: string;
  /**
   * The Lease's namespace.
   * @default {"default"}
   */
  namespace?: string;
  /**
   * This candidate's identity, written to `holderIdentity`; must be unique among candidates.
   * @default {`${Deno.hostname()}_${crypto.randomUUID()}`}
   */
  identity?: string;
  /**
   * How long a standby waits without seeing the Lease change before it takes over.
   * @default {15_000}
   */
  leaseDurationMs?: number;
  /**
   * How long the leader keeps retrying a failed renewal before it gives up leading.
   * @default {10_000}
   */
  renewDeadlineMs?: number;
  /**
   * The time between attempts to acquire or renew.
   * @default {2_000}
   */
  retryPeriodMs?: number;
  /**
   * Whether stopping (the signal of {@linkcode LeaderElector.run} aborting) releases the
   * Lease so that a standby takes over at once. Only set `false` to simulate a crash.
   * @default {true}
   */
  releaseOnCancel?: boolean;
  /**
   * The time source for attempts and expiry.
   * @default {realClock}
   */
  clock?: Clock;
  /** Called on becoming leader; `signal` aborts the moment leadership ends. */
  onStartedLeading?(signal: AbortSignal): void;
  /** Called once when leadership ends, with why; not called if never elected. */
  onStoppedLeading?(reason: LeaderElectionEnd): void;
  /** Called when a different holder is observed, including the first one and this one. */
  onNewLeader?(identity: string): void;
  /** Metric hooks, see `leaderElectionMetrics` in `metrics_controller.ts`. */
  metrics?: LeaderElectionMetrics;
}

type LeaseSpec = NonNullable<Lease["spec"]>;

const JITTER = 0.2;
const log = getLogger(["kubeno", "leader-election"]);

/**
 * A candidate in a Lease-based leader election.
 *
 * Flow: `run(signal)` polls every `retryPeriodMs` (plus up to 20 % jitter) until the Lease is
 * free (no holder, or no change observed for the holder's `leaseDurationSeconds`), then takes
 * it with an update guarded by `resourceVersion` (a 409 Conflict means another candidate
 * won; it retries next period). While leading it renews every `retryPeriodMs`. When no
 * renewal has succeeded for `renewDeadlineMs`, or the Lease shows another holder, it stops
 * leading: `onStoppedLeading("lost")` runs and `run` resolves `"lost"`; the operator must
 * then stop reconciling at once and exit. When the signal aborts, or on `release()`, the
 * leader writes an empty `holderIdentity` with `leaseDurationSeconds: 1` so that a standby
 * takes over on its next attempt.
 *
 * Guarantees: expiry is judged, as client-go does, by the local clock's time when this
 * candidate last saw the Lease record change, never by the remote `renewTime`, so clock
 * offsets between machines do not matter (differences in clock rate do). The leader gives
 * up after `renewDeadlineMs`, before a standby may take over after `leaseDurationMs`.
 *
 * Caveats: there is no fencing. A leader whose process stalls longer than
 * `leaseDurationMs - renewDeadlineMs` may act after a standby took over.
 *
 * Errors: failed API calls are logged and retried; `run` does not throw for them.
 *
 * @example Run while leading, stop on loss
 * ```ts ignore — needs a live API server to hold the Lease on
 * import { createClient } from "../../client/client.ts";
 * import { leaderElector } from "./leader_election.ts";
 *
 * const client = await createClient();
 * const elector = leaderElector({ client, name: "myapp-operator", namespace: "default" });
 * const stop = new AbortController();
 * const ended = elector.run(stop.signal);
 * await elector.elected;
 * // start controllers here
 * if ((await ended) === "lost") throw new Error("Lost the Lease: stop writing now");
 * ```
 */
export class LeaderElector implements AsyncDisposable {
  /** This candidate's identity. */
  readonly identity: string;
  /** The Lease's name. */
  readonly name: string;
  /** The Lease's namespace. */
  readonly namespace: string;
  /** Resolves on first becoming leader; rejects when `run` ends before that. */
  readonly elected: Promise<void>;
  #o: LeaderElectorOptions;
  #client: LeaseClient;
  #clock: Clock;
  #leaseMs: number;
  #renewMs: number;
  #retryMs: number;
  #lease?: Lease;
  #observedRaw = "";
  #observedAt = 0;
  #reportedLeader?: string;
  #leading?: AbortController;
  #electedResolve!: () => void;
  #electedReject!: (err: unknown) => void;
  #running?: Promise<LeaderElectionEnd>;
  #stop = new AbortController();

  /**
   * Use {@linkcode leaderElector}.
   *
   * @param options The Lease, identity, durations and callbacks.
   * @throws {RangeError} When the durations are not positive, `leaseDurationMs` is not above
   * `renewDeadlineMs`, or `renewDeadlineMs` is not above 1.2 × `retryPeriodMs`.
   * @throws {TypeError} When `name` or `identity` is empty.
   */
  constructor(options: LeaderElectorOptions) {
    this.#o = options;
    this.#client = options.client;
    this.#clock = options.clock ?? realClock;
    this.#leaseMs = options.leaseDurationMs ?? 15_000;
    this.#renewMs = options.renewDeadlineMs ?? 10_000;
    this.#retryMs = options.retryPeriodMs ?? 2_000;
    this.name = options.name;
    this.namespace = options.namespace ?? "default";
    this.identity = options.identity ?? defaultIdentity();
    if (!this.name) throw new TypeError("Cannot create leader elector: name is empty");
    if (!this.identity) throw new TypeError("Cannot create leader elector: identity is empty");
    for (const [k, v] of Object.entries({ l: this.#leaseMs, r: this.#renewMs, p: this.#retryMs })) {
      if (!(v > 0 && Number.isFinite(v))) {
        const field = { l: "leaseDurationMs", r: "renewDeadlineMs", p: "retryPeriodMs" }[k];
        throw new RangeError(`Cannot create leader elector: ${field} must be > 0, got "${v}"`);
      }
    }
    if (this.#leaseMs <= this.#renewMs) {
      throw new RangeError(
        `Cannot create leader elector: leaseDurationMs "${this.#leaseMs}" must be greater than renewDeadlineMs "${this.#renewMs}"`,
      );
    }
    if (this.#renewMs <= (1 + JITTER) * this.#retryMs) {
      throw new RangeError(
        `Cannot create leader elector: renewDeadlineMs "${this.#renewMs}" must be greater than 1.2 × retryPeriodMs "${this.#retryMs}"`,
      );
    }
    this.elected = new Promise((resolve, reject) => {
      this.#electedResolve = resolve;
      this.#electedReject = reject;
    });
    this.elected.catch(() => {});
  }

  /**
   * Whether this candidate leads now.
   *
   * @returns `true` between `onStartedLeading` and `onStoppedLeading`.
   */
  get isLeader(): boolean {
    return this.#leading !== undefined;
  }

  /**
   * The holder last observed on the Lease.
   *
   * @returns The identity, or `undefined` before the first read or while the Lease is free.
   */
  get leader(): string | undefined {
    return this.#lease?.spec?.holderIdentity || undefined;
  }

  /**
   * Campaigns, leads and renews until leadership is lost or `signal` aborts.
   *
   * @param signal Stops the election; a leader then releases the Lease (see
   * `releaseOnCancel`).
   * @returns Why it ended: `"lost"` or `"stopped"`.
   * @throws {LeaderElectionError} When called a second time.
   */
  run(signal?: AbortSignal): Promise<LeaderElectionEnd> {
    if (this.#running) {
      throw new LeaderElectionError(
        `Cannot run leader elector for lease "${this.#describe()}": already ran`,
      );
    }
    const stop = signal ? AbortSignal.any([signal, this.#stop.signal]) : this.#stop.signal;
    this.#running = this.#loop(stop);
    return this.#running;
  }

  /**
   * Stops the election and, when leading, releases the Lease so a standby takes over at
   * once. Safe to call more than once.
   *
   * @returns A promise that resolves once `run` has ended.
   */
  async release(): Promise<void> {
    this.#stop.abort(new DOMException("Leader election released", "AbortError"));
    await this.#running;
  }

  /** Same as {@linkcode LeaderElector.release}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /**
   * A liveness check, like client-go's `HealthzAdaptor`: fails when this candidate thinks it
   * leads but has not renewed for longer than the lease duration plus `toleranceMs`, which
   * means the renew loop is wedged.
   *
   * @param toleranceMs Extra time allowed past the lease duration.
   * @throws {LeaderElectionError} When the leader's renewals are overdue.
   */
  check(toleranceMs = 0): void {
    if (!this.isLeader) return;
    const since = this.#clock.now() - this.#observedAt;
    if (since > this.#leaseMs + toleranceMs) {
      throw new LeaderElectionError(
        `Leader election for lease "${this.#describe()}" has not renewed for ${since} ms`,
      );
    }
  }

  async #loop(signal: AbortSignal): Promise<LeaderElectionEnd> {
    log.info("Attempting to acquire lease {lease}", {
      lease: this.#describe(),
      identity: this.identity,
    });
    // One span for the campaign, from the first attempt to the Lease (a standby's lasts until
    // it takes over); leading itself runs outside it, so the controllers' spans are not in it.
    const acquired = await inSpan("leader election", () => this.#spanAttributes(), async (span) => {
      let attempts = 1;
      while (!(await this.#tryAcquireOrRenew(signal))) {
        this.#reportTransition();
        const wait = this.#retryMs * (1 + JITTER * Math.random());
        if (!(await this.#sleep(wait, signal))) {
          span.set({
            "kubeno.leader_election.attempts": attempts,
            "kubeno.leader_election.result": "stopped",
          });
          return false;
        }
        attempts++;
      }
      span.set({
        "kubeno.leader_election.attempts": attempts,
        "kubeno.leader_election.result": "acquired",
      });
      return true;
    }, { root: true });
    if (!acquired) {
      this.#electedReject(signal.reason);
      return "stopped";
    }
    this.#reportTransition();
    log.info("Acquired lease {lease}", { lease: this.#describe(), identity: this.identity });
    this.#startLeading();
    const end = await this.#renewLoop(signal);
    if (end === "lost") {
      inSpan("leader election lost", () => this.#spanAttributes(), () => {}, { root: true });
    }
    this.#stopLeading(end);
    if (end === "stopped" && (this.#o.releaseOnCancel ?? true)) await this.#release();
    return end;
  }

  async #renewLoop(signal: AbortSignal): Promise<LeaderElectionEnd> {
    let lastRenew = this.#observedAt;
    for (;;) {
      if (!(await this.#sleep(this.#retryMs, signal))) return "stopped";
      const started = this.#clock.now();
      const deadline = lastRenew + this.#renewMs;
      if (started >= deadline) return this.#lostByDeadline();
      const attempt = new AbortController();
      const timer = this.#clock.setTimeout(
        () => attempt.abort(new DOMException("Renew deadline passed", "TimeoutError")),
        deadline - started,
      );
      const ok = await this.#tryAcquireOrRenew(AbortSignal.any([signal, attempt.signal]));
      this.#clock.clearTimeout(timer);
      this.#reportTransition();
      if (ok) {
        lastRenew = started;
        continue;
      }
      if (signal.aborted) return "stopped";
      const holder = this.#lease?.spec?.holderIdentity;
      if (holder && holder !== this.identity) {
        log.error("Lost lease {lease} to {holder}", { lease: this.#describe(), holder });
        return "lost";
      }
      if (this.#clock.now() >= deadline) return this.#lostByDeadline();
    }
  }

  #spanAttributes(): Record<string, string> {
    return {
      "kubeno.lease": this.#describe(),
      "kubeno.leader_election.identity": this.identity,
      "kubeno.leader_election.holder": this.#lease?.spec?.holderIdentity ?? "",
    };
  }

  #lostByDeadline(): "lost" {
    log.error("Lost lease {lease}: no renewal succeeded within {renewDeadlineMs} ms", {
      lease: this.#describe(),
      renewDeadlineMs: this.#renewMs,
    });
    return "lost";
  }

  // One attempt; never throws. Returns whether this candidate holds the Lease afterwards.
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = this.#clock.now();
    const desired: LeaseSpec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.#leaseMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
    };
    const opts = { namespace: this.namespace, signal };
    let current: Lease;
    try {
      current = await this.#client.get(Lease, this.name, opts);
    } catch (err) {
      if (!isNotFound(err)) return this.#failed("get", err, signal);
      try {
        const lease = { metadata: { name: this.name, namespace: this.namespace }, spec: desired };
        this.#observe(
          await this.#client.create(
            Lease,
            { ...lease, spec: { ...desired, leaseTransitions: 0 } },
            opts,
          ),
        );
        return true;
      } catch (err) {
        return this.#failed("create", err, signal);
      }
    }
    this.#observe(current);
    const old = current.spec ?? {};
    const mine = old.holderIdentity === this.identity;
    const validUntil = this.#observedAt + (old.leaseDurationSeconds ?? 0) * 1000;
    if (old.holderIdentity && !mine && validUntil > now) return false;
    desired.leaseTransitions = (old.leaseTransitions ?? 0) + (mine ? 0 : 1);
    if (mine && old.acquireTime) desired.acquireTime = old.acquireTime;
    try {
      this.#observe(
        await this.#client.replace(Lease, { ...current, spec: { ...old, ...desired } }, opts),
      );
      return true;
    } catch (err) {
      return this.#failed("update", err, signal);
    }
  }

  #observe(lease: Lease): void {
    const raw = JSON.stringify(lease.spec ?? {});
    this.#lease = lease;
    if (raw !== this.#observedRaw) {
      this.#observedRaw = raw;
      this.#observedAt = this.#clock.now();
    }
  }

  #failed(action: string, err: unknown, signal: AbortSignal): false {
    if (signal.aborted) return false;
    const level = isConflict(err) ? "debug" : "warn";
    log[level]("Cannot {action} lease {lease}: {error}", {
      action,
      lease: this.#describe(),
      error: err instanceof Error ? err.message : String(err),
    });
    return false;
  }

  async #release(): Promise<void> {
    const deadline = AbortSignal.timeout(this.#renewMs);
    for (let attempt = 0; attempt < 3 && !deadline.aborted; attempt++) {
      const lease = this.#lease;
      if (lease?.spec?.holderIdentity !== this.identity) return;
      const now = microTime(this.#clock.now());
      const spec: LeaseSpec = {
        ...lease.spec,
        holderIdentity: "",
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
      };
      const opts = { namespace: this.namespace, signal: deadline };
      try {
        this.#observe(await this.#client.replace(Lease, { ...lease, spec }, opts));
        log.info("Released lease {lease}", { lease: this.#describe() });
        return;
      } catch (err) {
        this.#failed("release", err, deadline);
        if (!isConflict(err)) return;
        try {
          this.#observe(await this.#client.get(Lease, this.name, opts));
        } catch {
          return;
        }
      }
    }
  }

  #startLeading(): void {
    this.#leading = new AbortController();
    this.#o.metrics?.leading(true);
    this.#electedResolve();
    this.#callback(() => this.#o.onStartedLeading?.(this.#leading!.signal));
  }

  #stopLeading(reason: LeaderElectionEnd): void {
    const leading = this.#leading;
    this.#leading = undefined;
    leading?.abort(new DOMException(`Leadership ${reason}`, "AbortError"));
    this.#o.metrics?.leading(false);
    this.#callback(() => this.#o.onStoppedLeading?.(reason));
  }

  #reportTransition(): void {
    const holder = this.#lease?.spec?.holderIdentity ?? "";
    if (holder === (this.#reportedLeader ?? "") || !holder) return;
    this.#reportedLeader = holder;
    log.info("New leader of lease {lease}: {holder}", { lease: this.#describe(), holder });
    this.#callback(() => this.#o.onNewLeader?.(holder));
  }

  #callback(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      log.error("Leader election callback failed: {error}", { error: String(err) });
    }
  }

  // Resolves false when the signal aborted first.
  async #sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    try {
      await this.#clock.sleep(ms, signal);
      return true;
    } catch {
      return false;
    }
  }

  #describe(): string {
    return `${this.namespace}/${this.name}`;
  }
}

/**
 * Creates a candidate for leader election on a Lease; call `run` to take part.
 *
 * @param options The client, Lease name and namespace, identity, durations and callbacks.
 * @returns The elector.
 * @throws {RangeError} When the durations are inconsistent (see {@linkcode LeaderElector}).
 * @throws {TypeError} When `name` or `identity` is empty.
 *
 * @example Durations are checked when the elector is created
 * ```ts
 * import { leaderElector, type LeaseClient } from "./leader_election.ts";
 *
 * const client = {} as LeaseClient; // never called before run()
 * try {
 *   leaderElector({ client, name: "op", leaseDurationMs: 5_000, renewDeadlineMs: 5_000 });
 *   throw new Error("Expected a RangeError");
 * } catch (err) {
 *   if (!(err instanceof RangeError)) throw err;
 * }
 * const elector = leaderElector({ client, name: "op", identity: "pod-a" });
 * if (elector.isLeader || elector.identity !== "pod-a") throw new Error("Unexpected state");
 * ```
 */
export function leaderElector(options: LeaderElectorOptions): LeaderElector {
  return new LeaderElector(options);
}

function defaultIdentity(): string {
  let host = "kubeno";
  try {
    host = Deno.hostname();
  } catch { /* no --allow-sys */ }
  return `${host}_${crypto.randomUUID()}`;
}

// metav1.MicroTime: RFC 3339 with exactly six fractional digits.
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/**
 * A leader elector was misused (run twice) or, as a liveness check, found its own renewals overdue.
 *
 * @example The one-line message
 * ```ts
 * import { LeaderElectionError } from "./leader_election.ts";
 * const err = new LeaderElectionError("Cannot do it");
 * if (err.name !== "LeaderElectionError" || err.message !== "Cannot do it") throw new Error(err.name);
 * ```
 */
export class LeaderElectionError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message What failed, one line.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "LeaderElectionError";
  }
}
