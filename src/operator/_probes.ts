// The operator's /healthz and /readyz checks, as `run` serves them on
// --health-probe-bind-address. Other parts of `run` add their own checks to the returned
// HealthChecks, e.g. the webhook server: `probes.addReadyz("webhook", check)`.
import { HealthChecks, informersSynced, watchesNotStalled } from "../runtime/manager/health.ts";
import type { Informer } from "../runtime/cache/informer.ts";
import type { LeaderElector } from "../runtime/manager/leader_election.ts";
import type { ShardCoordinator } from "../runtime/sharding/coordinator.ts";
import { getLogger } from "../util/log.ts";

const log = getLogger(["kubeno", "operator", "probes"]);

/** What {@linkcode operatorProbes} checks. */
export interface OperatorProbeOptions {
  /**
   * The manager's informers, read at every probe so informers created later count;
   * `undefined` until the manager has created them.
   */
  informers: () => Iterable<Informer<any>> | undefined;
  /** Whether the manager is shutting down (then not ready). */
  stopping: () => boolean;
  /** The leader elector once created, whose renew loop must not be wedged. */
  elector?: () => LeaderElector | undefined;
  /** A sharded operator's coordinator once created, whose membership must be current. */
  sharding?: () => ShardCoordinator | undefined;
  /**
   * How long a synced watch may receive nothing before `/healthz` fails. The API server
   * sends a bookmark about every minute, so keep this well above that.
   * @default 300_000
   */
  watchStallTimeoutMs?: number;
}

/**
 * The checks behind the operator's probes:
 *
 * - `/healthz`: `ping` (the process answers), `watches` (no synced watch silent for longer
 *   than `watchStallTimeoutMs`), `leader-election` (a leader's renewals are not overdue,
 *   like client-go's `HealthzAdaptor` with 20 s of tolerance), `sharding` (a sharded
 *   replica's membership is current).
 * - `/readyz`: `informers` (the manager started and every cache synced; a standby replica
 *   is ready too, its caches are warm).
 *
 * Failing checks are logged with their reasons, which the endpoints withhold.
 *
 * @param options The manager's informers, its state and the elector.
 * @returns The checks; add more with `addReadyz` / `addHealthz`.
 */
export function operatorProbes(options: OperatorProbeOptions): HealthChecks {
  const informers = () => options.informers() ?? [];
  const synced = informersSynced(informers);
  const checks = new HealthChecks({
    onFailure: (kind, results) => {
      for (const r of results) {
        if (!r.ok) {
          log.warn("Probe {probe} check {check} failed: {error}", {
            probe: kind,
            check: r.name,
            error: r.error,
          });
        }
      }
    },
  })
    .addHealthz("ping", () => {})
    .addHealthz(
      "watches",
      watchesNotStalled(informers, { maxSilenceMs: options.watchStallTimeoutMs }),
    )
    .addHealthz("leader-election", () => options.elector?.()?.check(LEADER_TOLERANCE_MS))
    .addReadyz("informers", (signal) => {
      if (options.informers() === undefined) throw new Error("Manager not started");
      if (options.stopping()) throw new Error("Manager shutting down");
      return synced(signal);
    });
  const sharding = options.sharding;
  if (sharding) checks.addHealthz("sharding", () => sharding()?.check());
  return checks;
}

// client-go's leader election health adaptor tolerance in controller-runtime's manager.
const LEADER_TOLERANCE_MS = 20_000;
