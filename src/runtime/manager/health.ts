/**
 * Health probes: `/healthz` (liveness: is the process working, are its watches alive) and
 * `/readyz` (readiness: are caches synced, are webhooks serving), answered the way
 * controller-runtime's `healthz` package answers them, so kubelet probes and habits carry
 * over.
 *
 * @module
 */

import { type HttpEndpoint, serveHttp } from "../../util/http_server.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import type { InformerHealth } from "../cache/informer.ts";
import { KubenoError } from "../../util/error.ts";

export type { HttpEndpoint };

/**
 * One named check: resolves when healthy, throws (or rejects) with the reason when not.
 * `signal` aborts after 10 s, when the check counts as failed. A passing check may return a
 * detail, which `?verbose` shows after its `ok` (e.g. what the operator runs without).
 */
export type HealthCheck = (signal: AbortSignal) => void | string | Promise<void | string>;

/** The outcome of one check. */
export interface CheckResult {
  /** The check's name. */
  name: string;
  /** Whether it passed (or was excluded). */
  ok: boolean;
  /** Set when excluded by `?exclude=`. */
  excluded?: boolean;
  /** What a passing check said about itself. */
  detail?: string;
  /** Why it failed. */
  error?: string;
}

/** Which endpoint a check belongs to. */
export type ProbeKind = "healthz" | "readyz";

/**
 * The checks behind `/healthz` and `/readyz`, and the HTTP handler that runs them.
 *
 * Responses follow controller-runtime: `200 ok` when every check passes; with `?verbose`,
 * one `[+]name ok` line per check then `healthz check passed`; on failure `500` with
 * `[-]name failed: reason withheld` lines (the reason is logged, not served, as the
 * endpoint is unauthenticated) then `healthz check failed`. `?exclude=name` skips a check.
 * `/healthz/<name>` runs one check and does show its reason. With no checks registered, a
 * `ping` check that always passes is used.
 *
 * @example Liveness and readiness
 * ```ts
 * import { HealthChecks } from "./health.ts";
 *
 * let synced = false;
 * const checks = new HealthChecks()
 *   .addReadyz("informers", () => {
 *     if (!synced) throw new Error("Caches not synced");
 *   });
 * const ready = await checks.handle(new Request("http://x/readyz?verbose"));
 * if (ready.status !== 500) throw new Error("Ready too early");
 * synced = true;
 * const res = await checks.handle(new Request("http://x/readyz?verbose"));
 * if ((await res.text()) !== "[+]informers ok\nhealthz check passed\n") throw new Error();
 * if ((await checks.handle(new Request("http://x/healthz"))).status !== 200) throw new Error();
 * ```
 */
export class HealthChecks {
  #checks: Record<ProbeKind, Map<string, HealthCheck>> = {
    healthz: new Map(),
    readyz: new Map(),
  };
  #onFailure?: (kind: ProbeKind, results: CheckResult[]) => void;

  /**
   * Creates an empty set of checks.
   *
   * @param options `onFailure` is told of each failing probe, e.g. to log the reasons.
   */
  constructor(options: { onFailure?: (kind: ProbeKind, results: CheckResult[]) => void } = {}) {
    this.#onFailure = options.onFailure;
  }

  /**
   * Adds a liveness check, run by `/healthz`. A failing liveness probe makes the kubelet
   * restart the container: only check what a restart fixes.
   *
   * @param name A name unique among liveness checks, e.g. `watches`.
   * @param check The check.
   * @returns This, for chaining.
   * @throws {TypeError} When the name is empty, has `/`, or is taken.
   */
  addHealthz(name: string, check: HealthCheck): this {
    return this.#add("healthz", name, check);
  }

  /**
   * Adds a readiness check, run by `/readyz`. Not ready means no traffic (e.g. to webhooks).
   *
   * @param name A name unique among readiness checks, e.g. `informers`.
   * @param check The check.
   * @returns This, for chaining.
   * @throws {TypeError} When the name is empty, has `/`, or is taken.
   */
  addReadyz(name: string, check: HealthCheck): this {
    return this.#add("readyz", name, check);
  }

  /**
   * Runs the checks of one kind, concurrently.
   *
   * @param kind `healthz` or `readyz`.
   * @param options Names to skip, and a signal that fails checks still running
   * (default: after 10 s).
   * @returns One result per check, in the order added.
   */
  async run(
    kind: ProbeKind,
    options: { exclude?: readonly string[]; signal?: AbortSignal } = {},
  ): Promise<CheckResult[]> {
    const checks = this.#checks[kind].size
      ? [...this.#checks[kind]]
      : [["ping", () => {}] as const];
    const signal = options.signal ?? AbortSignal.timeout(CHECK_TIMEOUT_MS);
    return await Promise.all(checks.map(async ([name, check]): Promise<CheckResult> => {
      if (options.exclude?.includes(name)) return { name, ok: true, excluded: true };
      try {
        const detail = await runCheck(check, signal);
        return detail ? { name, ok: true, detail } : { name, ok: true };
      } catch (err) {
        return { name, ok: false, error: err instanceof Error ? err.message : String(err) };
      }
    }));
  }

  /**
   * Answers `/healthz`, `/readyz` and `/healthz/<name>`, `/readyz/<name>`; anything else 404.
   *
   * @param req The request.
   * @returns The response.
   */
  async handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const [, kind, one, extra] = url.pathname.split("/");
    if ((kind !== "healthz" && kind !== "readyz") || extra !== undefined) {
      return text(404, "404 page not found\n");
    }
    if (one) {
      const check = this.#checks[kind].get(one) ?? (one === "ping" ? () => {} : undefined);
      if (!check) return text(404, "404 page not found\n");
      try {
        await runCheck(check, AbortSignal.timeout(CHECK_TIMEOUT_MS));
        return text(200, "ok");
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        return text(500, `internal server error: ${reason}\n`);
      }
    }
    const exclude = url.searchParams.getAll("exclude");
    const results = await this.run(kind, { exclude });
    let body = "";
    for (const r of results) {
      body += r.excluded
        ? `[+]${r.name} excluded: ok\n`
        : r.ok
        ? `[+]${r.name} ok${r.detail ? `: ${r.detail}` : ""}\n`
        : `[-]${r.name} failed: reason withheld\n`;
    }
    const unknown = exclude.filter((e) => !results.some((r) => r.name === e));
    if (unknown.length) {
      body += `warn: some health checks cannot be excluded: no matches for ${
        unknown.map((u) => JSON.stringify(u)).join(",")
      }\n`;
    }
    if (results.some((r) => !r.ok)) {
      this.#onFailure?.(kind, results);
      return text(500, `${body}healthz check failed\n`);
    }
    return text(200, url.searchParams.has("verbose") ? `${body}healthz check passed\n` : "ok");
  }

  #add(kind: ProbeKind, name: string, check: HealthCheck): this {
    if (!name || name.includes("/")) {
      throw new TypeError(`Cannot add ${kind} check: invalid name "${name}"`);
    }
    if (this.#checks[kind].has(name)) {
      throw new TypeError(`Cannot add ${kind} check "${name}": a check of that name exists`);
    }
    this.#checks[kind].set(name, check);
    return this;
  }
}

/** Options of {@linkcode serveProbes}. */
export interface ServeProbesOptions {
  /**
   * Where to listen, as kubebuilder's `--health-probe-bind-address`: `:8081`,
   * `127.0.0.1:8081`, or `0` to serve nothing.
   */
  address: string;
  /** Stops the server. */
  signal?: AbortSignal;
}

/**
 * Serves `/healthz` and `/readyz` (and their per-check paths) from `checks` over HTTP.
 *
 * @param checks The checks.
 * @param options The address and a signal.
 * @returns The running server, or `undefined` when `address` is `0`.
 * @throws {TypeError} When `address` is not a valid bind address.
 * @throws {Deno.errors.AddrInUse} When the port is taken.
 *
 * @example Serving probes on loopback
 * ```ts
 * import { HealthChecks, serveProbes } from "./health.ts";
 *
 * await using server = await serveProbes(new HealthChecks(), { address: "127.0.0.1:0" });
 * const res = await fetch(`${server!.url}healthz`);
 * if ((await res.text()) !== "ok") throw new Error("Not healthy");
 * ```
 */
export function serveProbes(
  checks: HealthChecks,
  options: ServeProbesOptions,
): Promise<HttpEndpoint | undefined> {
  return serveHttp(options.address, (req) => checks.handle(req), {
    signal: options.signal,
    name: "health probes",
  });
}

/** What the informer checks need of an informer. */
export interface ProbedInformer {
  /** The watched resource, for messages. */
  readonly resource: { readonly kind: string };
  /** Whether the first list has been applied. */
  readonly hasSynced: boolean;
  /** Watch state and time of the last event. */
  health(): InformerHealth;
}

/**
 * A readiness check that passes once every informer has synced.
 *
 * @param informers The informers now in use; called at each probe, so informers added
 * later count.
 * @returns The check.
 *
 * @example Ready once synced
 * ```ts
 * import { informersSynced } from "./health.ts";
 *
 * const inf = { resource: { kind: "ConfigMap" }, hasSynced: false, health: () => ({}) as never };
 * const check = informersSynced(() => [inf]);
 * try {
 *   check(new AbortController().signal);
 *   throw new Error("Expected not ready");
 * } catch (err) {
 *   if (!String(err).includes('"ConfigMap"')) throw err;
 * }
 * ```
 */
export function informersSynced(informers: () => Iterable<ProbedInformer>): HealthCheck {
  return () => {
    const waiting = [...informers()].filter((i) => !i.hasSynced).map((i) => i.resource.kind);
    if (waiting.length) {
      throw new HealthCheckError(
        `Informers not synced: ${waiting.map((k) => `"${k}"`).join(", ")}`,
      );
    }
  };
}

/** Options of {@linkcode watchesNotStalled}. */
export interface WatchesNotStalledOptions {
  /**
   * How long a synced informer may go without a list, event or bookmark. The API server
   * sends a bookmark about every minute, so a healthy watch is never silent for long.
   * @default {300_000}
   */
  maxSilenceMs?: number;
  /**
   * The clock the informers use.
   * @default {realClock}
   */
  clock?: Clock;
}

/**
 * A liveness check that fails when a synced informer has received nothing (no list, event
 * or bookmark) for `maxSilenceMs`: its watch is stalled beyond what its own watchdog and
 * relists could fix, and a restart is the remedy.
 *
 * @param informers The informers now in use; called at each probe.
 * @param options The silence allowed and the clock.
 * @returns The check.
 *
 * @example A silent informer fails the check
 * ```ts
 * import { watchesNotStalled } from "./health.ts";
 * import { FakeClock } from "../../testing/fake_clock.ts";
 *
 * const clock = new FakeClock(0);
 * const health = () => ({ healthy: true, synced: true, state: "watching", lastEventAt: 0, error: undefined }) as const;
 * const check = watchesNotStalled(() => [{ resource: { kind: "Pod" }, hasSynced: true, health }], {
 *   maxSilenceMs: 1_000,
 *   clock,
 * });
 * check(new AbortController().signal);
 * clock.tick(2_000);
 * try {
 *   check(new AbortController().signal);
 *   throw new Error("Expected a stalled watch");
 * } catch (err) {
 *   if (!String(err).includes("Watch stalled")) throw err;
 * }
 * ```
 */
export function watchesNotStalled(
  informers: () => Iterable<ProbedInformer>,
  options: WatchesNotStalledOptions = {},
): HealthCheck {
  const maxSilenceMs = options.maxSilenceMs ?? 300_000;
  const clock = options.clock ?? realClock;
  return () => {
    const now = clock.now();
    const stalled: string[] = [];
    for (const inf of informers()) {
      const h = inf.health();
      if (!h.synced || h.state === "stopped" || h.lastEventAt === undefined) continue;
      const silent = now - h.lastEventAt;
      // A watch failing to reconnect says why.
      const why = h.error ? ` (retrying after: ${h.error.message})` : "";
      if (silent > maxSilenceMs) {
        stalled.push(`"${inf.resource.kind}" silent for ${silent} ms${why}`);
      }
    }
    if (stalled.length) throw new HealthCheckError(`Watch stalled: ${stalled.join(", ")}`);
  };
}

// A check that has not answered by then fails, so that a probe never hangs.
const CHECK_TIMEOUT_MS = 10_000;

async function runCheck(check: HealthCheck, signal: AbortSignal): Promise<void | string> {
  if (signal.aborted) throw new HealthCheckError("Check timed out");
  const { promise, reject } = Promise.withResolvers<never>();
  const onAbort = () => reject(new HealthCheckError("Check timed out"));
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    return await Promise.race([check(signal), promise]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

function text(status: number, body: string): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}

/**
 * A health or readiness check failed: the message is what `/healthz` or `/readyz` reports for it (informers not synced, a watch stalled, a check timed out, a leader that stopped renewing).
 *
 * @example The one-line message
 * ```ts
 * import { HealthCheckError } from "./health.ts";
 * const err = new HealthCheckError("Cannot do it");
 * if (err.name !== "HealthCheckError" || err.message !== "Cannot do it") throw new Error(err.name);
 * ```
 */
export class HealthCheckError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message What failed, one line.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HealthCheckError";
  }
}
