// What `run` adds to the Manager besides the controllers: the metrics and probe servers
// (group `server`), the webhook server (`webhook`), the start-up lines (`cache`, once the
// webhooks serve) and the cache-sync deadline (`always`). Each is a Runnable: the Manager
// starts and stops them in order, and a failure reaches it through `fail`.
//
// The probes' checks are below.
import type { Client } from "../../client/client.ts";
import type { Manager } from "../../runtime/manager/manager.ts";
import type { Runnable } from "../../runtime/manager/runnable.ts";
import { getLogger } from "../../util/log.ts";
import type { Admission } from "../../webhook/admission.ts";
import type { RunningWebhooks } from "../../webhook/webhooks.ts";
import type { CommandContext } from "../command/command.ts";
import { describeLocalRun, type RunPlace } from "./run_settings.ts";
import { type OperatorMetrics, serveOperatorMetrics } from "./_metrics.ts";
import type { RunSettings } from "./run_settings.ts";
import { cacheSyncDeadline, startupSetting } from "./startup.ts";
import type { OperatorWebhook } from "../../webhook/manifests.ts";
import {
  HealthCheckError,
  HealthChecks,
  informersSynced,
  serveProbes,
  watchesNotStalled,
} from "../../runtime/manager/health.ts";
import type { Informer } from "../../runtime/cache/informer.ts";
import type { LeaderElector } from "../../runtime/manager/leader_election.ts";
import type { ShardCoordinator } from "../../runtime/sharding/coordinator.ts";

const log = getLogger(["kubeno", "operator"]);

/** What the runnables of `run` share. */
export interface RunParts {
  ctx: CommandContext;
  settings: RunSettings;
  metrics: OperatorMetrics;
  client: Client;
  place: RunPlace;
  probes: HealthChecks;
  /** The manager, once created; read only once it runs. */
  manager: () => Manager;
  /** Milliseconds left of `--startup-timeout`. */
  remainingMs: () => number;
}

/**
 * The runnables of `run`, in their groups.
 *
 * @param p What they share.
 * @returns The runnables to give the manager.
 */
export function runRunnables(p: RunParts): Runnable[] {
  const { settings } = p;
  const out: Runnable[] = [];
  if (settings.metrics) {
    const m = settings.metrics;
    out.push(server("metrics server", async (signal) => {
      const endpoint = await serveOperatorMetrics(p.metrics.registry, m, p.client, signal);
      log.info("Serving metrics at {url}metrics{auth}", {
        url: endpoint?.url,
        auth: m.secure ? " (authenticated and authorized)" : "",
      });
    }));
  }
  if (settings.healthAddress) {
    const address = settings.healthAddress;
    out.push(server("probe server", async (signal) => {
      const endpoint = await serveProbes(p.probes, { address, signal });
      log.info("Serving probes at {url}healthz and {url}readyz", { url: endpoint?.url });
    }));
  }
  let webhooks: RunningWebhooks | undefined;
  if (settings.webhook) {
    const hook = settings.webhook;
    const served = new AbortController();
    out.push({
      name: "webhook server",
      group: "webhook",
      start: async () => {
        // Outside a cluster (local development, tests) the server listens on loopback and
        // takes over the configurations by URL until it stops, as envtest registers them;
        // inside, the Service does.
        const local = p.place.local;
        // Loaded here: the server's node:tls, node:net and node:crypto cost an operator
        // without webhooks about 2.5 MiB and some milliseconds at start (issue 29).
        const { serveWebhooks } = await import("../../webhook/webhooks.ts");
        webhooks = await serveWebhooks(p.client, p.ctx.def.webhooks.filter(isAdmission), {
          name: p.ctx.def.name,
          namespace: p.place.namespace,
          port: hook.port,
          certDir: hook.certPath,
          local,
          conversions: p.ctx.def.conversions,
          server: { onRequest: p.metrics.webhook },
          signal: served.signal,
        });
        const serving = webhooks;
        p.probes.addReadyz("webhook", () => {
          if (serving.server.port <= 0) {
            throw new HealthCheckError("Webhook server is not listening");
          }
        });
        log.info("Serving admission webhooks at https://{host}:{port} ({mode})", {
          host: local ? "127.0.0.1" : "[::]",
          port: webhooks.server.port,
          mode: local ? "registered by URL until exit" : "behind the Service",
        });
      },
      stop: async () => {
        await webhooks?.close().catch(() => {});
        served.abort();
      },
    });
  }
  out.push({
    name: "start-up lines",
    group: "cache",
    start: () => {
      if (p.place.local) {
        // One plain line (braces escaped: it is the message template itself).
        const line = describeLocalRun(p.place, settings, webhooks, p.client.server);
        log.info(line.replaceAll("{", "{{").replaceAll("}", "}}"));
      }
      log.info("Starting {name} {version} with {count} controllers", {
        name: p.ctx.def.name,
        version: p.ctx.def.version,
        count: p.ctx.def.controllers.length,
      });
    },
    stop: () => {},
  });
  let deadline: Disposable | undefined;
  out.push({
    name: "cache-sync deadline",
    group: "always",
    start: ({ fail }) => {
      deadline = cacheSyncDeadline({
        remainingMs: p.remainingMs(),
        setting: startupSetting(settings.startupTimeoutMs),
        synced: () => p.manager().ready(),
        informers: () => p.manager().caches(),
        onExpired: (err) => fail(err),
      });
    },
    stop: () => deadline?.[Symbol.dispose](),
  });
  return out;
}

/** A server of the `server` group: `serve` listens until its signal aborts. */
function server(name: string, serve: (signal: AbortSignal) => Promise<void>): Runnable {
  const stop = new AbortController();
  return {
    name,
    group: "server",
    start: () => serve(stop.signal),
    stop: () => stop.abort(),
  };
}

/** Webhooks from `admission()` are served by the operator; others only add manifests. */
function isAdmission(w: OperatorWebhook): w is Admission {
  const a = w as Partial<Admission>;
  return typeof a.mutate === "function" && typeof a.validate === "function" && !!a.resource;
}

// The operator's /healthz and /readyz checks, as `run` serves them on
// --health-probe-bind-address. Other parts of `run` add their own checks to the returned
// HealthChecks, e.g. the webhook server: `probes.addReadyz("webhook", check)`.
const probeLog = getLogger(["kubeno", "operator", "probes"]);

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
   * The optional kinds controllers run without now (their API is not served), listed by the
   * passing `optional-kinds` readiness check.
   * @default none
   */
  missingKinds?: () => readonly { controller: string; kind: string }[];
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
 *   is ready too, its caches are warm) and `optional-kinds`, which always passes: an
 *   operator running without a kind whose CRD is not installed is ready, and `?verbose`
 *   lists those kinds (`[+]optional-kinds ok: running without Widget (example.com/v1) in
 *   controller "app"`).
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
          probeLog.warn("Probe {probe} check {check} failed: {error}", {
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
      if (options.informers() === undefined) throw new HealthCheckError("Manager not started");
      if (options.stopping()) throw new HealthCheckError("Manager shutting down");
      return synced(signal);
    })
    .addReadyz("optional-kinds", () => {
      const missing = options.missingKinds?.() ?? [];
      if (!missing.length) return;
      return "running without " +
        missing.map((m) => `${m.kind} in controller "${m.controller}"`).join(", ");
    });
  const sharding = options.sharding;
  if (sharding) checks.addHealthz("sharding", () => sharding()?.check());
  return checks;
}

// client-go's leader election health adaptor tolerance in controller-runtime's manager.
const LEADER_TOLERANCE_MS = 20_000;
