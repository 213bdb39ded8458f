// What `run` adds to the Manager besides the controllers: the metrics and probe servers
// (group `server`), the webhook server (`webhook`), the start-up lines (`cache`, once the
// webhooks serve) and the cache-sync deadline (`always`). Each is a Runnable: the Manager
// starts and stops them in order, and a failure reaches it through `fail`.
import type { Client } from "../client/client.ts";
import type { HealthChecks } from "../runtime/manager/health.ts";
import { serveProbes } from "../runtime/manager/health.ts";
import type { Manager } from "../runtime/manager/manager.ts";
import type { Runnable } from "../runtime/manager/runnable.ts";
import { getLogger } from "../util/log.ts";
import type { Admission } from "../webhook/admission.ts";
import { type RunningWebhooks, serveWebhooks } from "../webhook/webhooks.ts";
import type { CommandContext } from "./_command.ts";
import { describeLocalRun, type RunPlace } from "./_local.ts";
import { type OperatorMetrics, serveOperatorMetrics } from "./_metrics.ts";
import type { RunSettings } from "./_run_settings.ts";
import { cacheSyncDeadline, startupSetting } from "./_startup.ts";
import type { OperatorWebhook } from "./options.ts";

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
        webhooks = await serveWebhooks(p.client, p.ctx.def.webhooks.filter(isAdmission), {
          name: p.ctx.def.name,
          namespace: p.place.namespace,
          port: hook.port,
          certDir: hook.certPath,
          local,
          conversions: p.ctx.def.conversions,
          signal: served.signal,
        });
        const serving = webhooks;
        p.probes.addReadyz("webhook", () => {
          if (serving.server.port <= 0) throw new Error("Webhook server is not listening");
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
        informers: () => p.manager().informers?.all(),
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
