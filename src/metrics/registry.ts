/**
 * A small Prometheus registry: counters, gauges and histograms with labels, exposed in the
 * text format 0.0.4 that every Prometheus scraper reads. `metrics_controller.ts` defines
 * controller-runtime's metric families on top of it; `metrics_process.ts` the process ones.
 *
 * @module
 */

import { type HttpEndpoint, parseBindAddress, serveHttp } from "../util/http_server.ts";
import { createCa, issueCert } from "../util/x509.ts";
import type { Client } from "../client/client.ts";
import { withAuthenticationAndAuthorization } from "./authorized.ts";

export type { HttpEndpoint };

/** The `Content-Type` of the text exposition format. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Label values of one series, by label name. */
export type LabelValues<L extends string> = { readonly [K in L]?: string };

/** What defines a metric family. */
export interface MetricOptions<L extends string> {
  /** The family's name, e.g. `controller_runtime_reconcile_total`. */
  name: string;
  /** One line saying what it measures. */
  help: string;
  /**
   * The label names each series carries.
   * @default {[]}
   */
  labelNames?: readonly L[];
}

/** What defines a histogram family. */
export interface HistogramOptions<L extends string> extends MetricOptions<L> {
  /**
   * Upper bounds of the buckets, ascending; `+Inf` is added.
   * @default {[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]}
   */
  buckets?: readonly number[];
}

type Kind = "counter" | "gauge" | "histogram";
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * @internal What all metric families share: a name, help, label names and series. The
 * metric types are `Counter`, `Gauge` and `Histogram`; this base is not for subclassing.
 */
abstract class Family<L extends string, S> {
  /** The family's name. */
  readonly name: string;
  /** The help text. */
  readonly help: string;
  /** The label names, in order. */
  readonly labelNames: readonly L[];
  /** The Prometheus type. */
  abstract readonly kind: Kind;
  #series = new Map<string, { values: string[]; state: S }>();

  constructor(options: MetricOptions<L>) {
    if (!NAME.test(options.name)) {
      throw new TypeError(`Cannot define metric: invalid name "${options.name}"`);
    }
    for (const l of options.labelNames ?? []) {
      if (!LABEL.test(l) || l.startsWith("__")) {
        throw new TypeError(`Cannot define metric "${options.name}": invalid label name "${l}"`);
      }
    }
    this.name = options.name;
    this.help = options.help;
    this.labelNames = [...(options.labelNames ?? [])];
  }

  protected abstract init(): S;

  protected series(labels: LabelValues<L> | undefined): S {
    const values = this.labelNames.map((l) => labels?.[l] ?? "");
    if (labels) {
      for (const k of Object.keys(labels)) {
        if (!this.labelNames.includes(k as L)) {
          throw new TypeError(`Cannot record metric "${this.name}": unknown label "${k}"`);
        }
      }
    }
    const key = values.join("\x00");
    let s = this.#series.get(key);
    if (!s) this.#series.set(key, s = { values, state: this.init() });
    return s.state;
  }

  /**
   * Forgets one series, e.g. of a controller that stopped.
   *
   * @param labels The series' label values.
   * @returns Whether it existed.
   */
  remove(labels: LabelValues<L> = {}): boolean {
    return this.#series.delete(this.labelNames.map((l) => labels[l] ?? "").join("\x00"));
  }

  /**
   * Forgets every series whose labels include `labels`, e.g. all of a disengaged cluster's.
   *
   * @param labels Some label values; a family without one of these labels keeps its series.
   * @returns How many series were removed.
   */
  removeMatching(labels: Record<string, string>): number {
    const idx = Object.entries(labels).map(([k, v]) =>
      [this.labelNames.indexOf(k as L), v] as const
    );
    if (idx.length === 0 || idx.some(([i]) => i < 0)) return 0;
    let n = 0;
    for (const [key, { values }] of this.#series) {
      if (idx.every(([i, v]) => values[i] === v)) n += this.#series.delete(key) ? 1 : 0;
    }
    return n;
  }

  /** @internal Renders the family. */
  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.kind}`);
    for (const { values, state } of this.#series.values()) {
      this.renderSeries(out, values.map((v, i) => [this.labelNames[i], v]), state);
    }
  }

  protected abstract renderSeries(out: string[], labels: string[][], state: S): void;
}

/**
 * A value that only goes up (or resets with the process), such as a count of requests.
 *
 * @typeParam L The label names.
 */
export class Counter<L extends string = never> extends Family<L, { v: number }> {
  /** `"counter"`. */
  readonly kind = "counter";

  /** @internal A new series' state. */
  protected init(): { v: number } {
    return { v: 0 };
  }

  /**
   * Adds to the series with these labels.
   *
   * @param labels The label values.
   * @param value How much to add.
   * @throws {RangeError} When `value` is negative or not a number.
   * @throws {TypeError} When a label is not one of the family's.
   */
  inc(labels?: LabelValues<L>, value = 1): void {
    if (!(value >= 0)) {
      throw new RangeError(`Cannot increase counter "${this.name}" by "${value}"`);
    }
    this.series(labels).v += value;
  }

  /**
   * The current value of one series.
   *
   * @param labels The label values.
   * @returns The value; 0 for a series never recorded.
   */
  get(labels?: LabelValues<L>): number {
    return this.series(labels).v;
  }

  /** @internal Renders one series in the text exposition format. */
  protected renderSeries(out: string[], labels: string[][], s: { v: number }): void {
    out.push(`${this.name}${renderLabels(labels)} ${formatValue(s.v)}`);
  }
}

/**
 * A value that goes up and down, such as a queue's depth.
 *
 * @typeParam L The label names.
 */
export class Gauge<L extends string = never> extends Family<L, { v: number }> {
  /** `"gauge"`. */
  readonly kind = "gauge";

  /** @internal A new series' state. */
  protected init(): { v: number } {
    return { v: 0 };
  }

  /**
   * Sets the series with these labels.
   *
   * @param labels The label values.
   * @param value The new value.
   * @throws {TypeError} When a label is not one of the family's.
   */
  set(labels: LabelValues<L> | undefined, value: number): void {
    this.series(labels).v = value;
  }

  /**
   * Adds to the series (subtracts for a negative `value`).
   *
   * @param labels The label values.
   * @param value How much to add.
   * @throws {TypeError} When a label is not one of the family's.
   */
  inc(labels?: LabelValues<L>, value = 1): void {
    this.series(labels).v += value;
  }

  /**
   * Subtracts from the series.
   *
   * @param labels The label values.
   * @param value How much to subtract.
   * @throws {TypeError} When a label is not one of the family's.
   */
  dec(labels?: LabelValues<L>, value = 1): void {
    this.series(labels).v -= value;
  }

  /**
   * The current value of one series.
   *
   * @param labels The label values.
   * @returns The value; 0 for a series never recorded.
   */
  get(labels?: LabelValues<L>): number {
    return this.series(labels).v;
  }

  /** @internal Renders one series in the text exposition format. */
  protected renderSeries(out: string[], labels: string[][], s: { v: number }): void {
    out.push(`${this.name}${renderLabels(labels)} ${formatValue(s.v)}`);
  }
}

/** @internal A histogram series: bucket counts, sum and count. */
interface HistogramState {
  counts: number[];
  sum: number;
  count: number;
}

/**
 * Observations counted into buckets, such as durations; exposed as cumulative
 * `_bucket{le=...}` series with `_sum` and `_count`.
 *
 * @typeParam L The label names.
 */
export class Histogram<L extends string = never> extends Family<L, HistogramState> {
  /** `"histogram"`. */
  readonly kind = "histogram";
  /** The buckets' upper bounds, without `+Inf`. */
  readonly buckets: readonly number[];

  /**
   * Use {@linkcode Registry.histogram}.
   *
   * @param options Name, help, labels and buckets.
   * @throws {TypeError} For a label named `le` or buckets that are not ascending.
   */
  constructor(options: HistogramOptions<L>) {
    super(options);
    const buckets = (options.buckets ?? DEFAULT_BUCKETS).filter((b) => b !== Infinity);
    if (this.labelNames.includes("le" as L)) {
      throw new TypeError(`Cannot define histogram "${this.name}": "le" is a reserved label`);
    }
    if (buckets.some((b, i) => Number.isNaN(b) || (i > 0 && b <= buckets[i - 1]))) {
      throw new TypeError(`Cannot define histogram "${this.name}": buckets must ascend`);
    }
    this.buckets = buckets;
  }

  /** @internal A new series' state. */
  protected init(): HistogramState {
    return { counts: new Array(this.buckets.length).fill(0), sum: 0, count: 0 };
  }

  /**
   * Records one observation.
   *
   * @param labels The label values.
   * @param value The observed value, e.g. seconds.
   * @throws {TypeError} When a label is not one of the family's.
   */
  observe(labels: LabelValues<L> | undefined, value: number): void {
    const s = this.series(labels);
    const i = this.buckets.findIndex((b) => value <= b);
    if (i >= 0) s.counts[i]++;
    s.sum += value;
    s.count++;
  }

  /**
   * The count and sum of one series.
   *
   * @param labels The label values.
   * @returns The number of observations and their sum.
   */
  get(labels?: LabelValues<L>): { count: number; sum: number } {
    const s = this.series(labels);
    return { count: s.count, sum: s.sum };
  }

  /** @internal Renders one series in the text exposition format. */
  protected renderSeries(out: string[], labels: string[][], s: HistogramState): void {
    let cumulative = 0;
    this.buckets.forEach((b, i) => {
      cumulative += s.counts[i];
      const l = renderLabels([...labels, ["le", formatValue(b)]]);
      out.push(`${this.name}_bucket${l} ${formatValue(cumulative)}`);
    });
    out.push(`${this.name}_bucket${renderLabels([...labels, ["le", "+Inf"]])} ${s.count}`);
    out.push(`${this.name}_sum${renderLabels(labels)} ${formatValue(s.sum)}`);
    out.push(`${this.name}_count${renderLabels(labels)} ${formatValue(s.count)}`);
  }
}

type AnyFamily = Counter<string> | Gauge<string> | Histogram<string>;

/**
 * A set of metric families, rendered together for a scrape. Defining a family a second time
 * with the same type and labels returns the first, so independent parts of an operator can
 * each ask for the families they record into.
 *
 * @example Count, measure and expose
 * ```ts
 * import { Registry } from "./registry.ts";
 *
 * const registry = new Registry();
 * const total = registry.counter({
 *   name: "controller_runtime_reconcile_total",
 *   help: "Total number of reconciliations per controller",
 *   labelNames: ["controller", "result"],
 * });
 * total.inc({ controller: "myapp", result: "success" });
 * const text = await registry.metrics();
 * if (!text.includes('controller_runtime_reconcile_total{controller="myapp",result="success"} 1')) {
 *   throw new Error(text);
 * }
 * ```
 */
export class Registry {
  #families = new Map<string, AnyFamily>();
  #collectors: (() => void | Promise<void>)[] = [];

  /**
   * Defines (or returns the existing) counter family.
   *
   * @typeParam L The label names.
   * @param options Name, help and label names.
   * @returns The counter.
   * @throws {TypeError} For an invalid name, or a name already used by a different family.
   */
  counter<L extends string = never>(options: MetricOptions<L>): Counter<L> {
    return this.#define(options, "counter", () => new Counter<L>(options)) as Counter<L>;
  }

  /**
   * Defines (or returns the existing) gauge family.
   *
   * @typeParam L The label names.
   * @param options Name, help and label names.
   * @returns The gauge.
   * @throws {TypeError} For an invalid name, or a name already used by a different family.
   */
  gauge<L extends string = never>(options: MetricOptions<L>): Gauge<L> {
    return this.#define(options, "gauge", () => new Gauge<L>(options)) as Gauge<L>;
  }

  /**
   * Defines (or returns the existing) histogram family.
   *
   * @typeParam L The label names.
   * @param options Name, help, label names and buckets.
   * @returns The histogram.
   * @throws {TypeError} For an invalid name or buckets, or a name already used differently.
   */
  histogram<L extends string = never>(options: HistogramOptions<L>): Histogram<L> {
    return this.#define(options, "histogram", () => new Histogram<L>(options)) as Histogram<L>;
  }

  /**
   * Forgets, in every family, the series whose labels include `labels`: e.g. all series of a
   * fleet's disengaged cluster. Counters go too (a cluster engaged again starts from 0, which
   * `rate()` reads as a reset), as client_golang's `DeletePartialMatch` does.
   *
   * @param labels Some label values, e.g. `{ cluster: "eu-1" }`.
   * @returns How many series were removed.
   *
   * @example Forgetting a cluster's series
   * ```ts
   * import { Registry } from "./registry.ts";
   * const registry = new Registry();
   * const c = registry.counter({ name: "x_total", help: "x", labelNames: ["cluster", "k"] });
   * c.inc({ cluster: "a", k: "1" });
   * c.inc({ cluster: "b", k: "1" });
   * if (registry.removeSeries({ cluster: "a" }) !== 1) throw new Error("not removed");
   * ```
   */
  removeSeries(labels: Record<string, string>): number {
    let n = 0;
    for (const f of this.#families.values()) n += f.removeMatching(labels);
    return n;
  }

  /**
   * Adds a function that runs before each scrape, to refresh gauges such as memory use.
   *
   * @param collect The function; its errors are ignored so that a scrape never fails.
   */
  onCollect(collect: () => void | Promise<void>): void {
    this.#collectors.push(collect);
  }

  /**
   * Runs the collectors and renders every family in the text format 0.0.4, sorted by name.
   *
   * @returns The exposition text.
   */
  async metrics(): Promise<string> {
    for (const c of this.#collectors) {
      try {
        await c();
      } catch { /* a scrape must not fail because one source did */ }
    }
    const out: string[] = [];
    for (const name of [...this.#families.keys()].sort()) this.#families.get(name)!.render(out);
    return out.join("\n") + "\n";
  }

  /**
   * Serves a scrape.
   *
   * @returns A 200 response with the exposition text.
   */
  async response(): Promise<Response> {
    return new Response(await this.metrics(), {
      headers: { "content-type": METRICS_CONTENT_TYPE },
    });
  }

  #define(options: MetricOptions<string>, kind: Kind, create: () => AnyFamily): AnyFamily {
    const existing = this.#families.get(options.name);
    if (existing) {
      const same = existing.kind === kind &&
        existing.labelNames.join() === (options.labelNames ?? []).join();
      if (!same) {
        throw new TypeError(
          `Cannot define ${kind} "${options.name}": already defined as a ${existing.kind} with labels "${existing.labelNames}"`,
        );
      }
      return existing;
    }
    const family = create();
    this.#families.set(options.name, family);
    return family;
  }
}

/** Options of {@linkcode serveMetrics}. */
export interface ServeMetricsOptions {
  /**
   * Where to listen, as kubebuilder's `--metrics-bind-address`: `:8080` (all interfaces),
   * `127.0.0.1:8080`, `[::1]:8080`, or `0` to serve nothing.
   */
  address: string;
  /** Stops the server. */
  signal?: AbortSignal;
  /**
   * Serve HTTPS and let through only requests whose bearer token the API server
   * authenticates (TokenReview) and whose user may `get` `/metrics` (SubjectAccessReview),
   * as kubebuilder v4's `--metrics-secure`. Without `certDir` the certificate is
   * self-signed, made at start and kept in memory, as controller-runtime does.
   * @default plain HTTP, no authentication
   */
  secure?: {
    /** Sends the reviews. */
    client: Pick<Client, "request">;
    /** Directory with `tls.crt` and `tls.key` (read at start). */
    certDir?: string;
    /** Names for the self-signed certificate. @default ["localhost", "127.0.0.1", "::1"] */
    hosts?: string[];
  };
}

/**
 * Serves `GET /metrics` from `registry` over HTTP, or with `secure` over HTTPS behind the
 * API server's authentication and authorization.
 *
 * @param registry The metrics to expose.
 * @param options The address, a signal and the secure mode.
 * @returns The running server, or `undefined` when `address` is `0`.
 * @throws {TypeError} When `address` is not a valid bind address.
 * @throws {Deno.errors.AddrInUse} When the port is taken.
 * @throws {Deno.errors.NotFound} When `secure.certDir` lacks `tls.crt` or `tls.key`.
 *
 * @example Serve on a free loopback port and scrape
 * ```ts
 * import { Registry, serveMetrics } from "./registry.ts";
 *
 * const registry = new Registry();
 * registry.gauge({ name: "up", help: "Whether it runs" }).set(undefined, 1);
 * await using server = await serveMetrics(registry, { address: "127.0.0.1:0" });
 * const res = await fetch(`${server!.url}metrics`);
 * if (!(await res.text()).includes("up 1")) throw new Error("Metric missing");
 * ```
 */
export function serveMetrics(
  registry: Registry,
  options: ServeMetricsOptions,
): Promise<HttpEndpoint | undefined> {
  const handler = (req: Request) => {
    const path = new URL(req.url).pathname;
    if (path !== "/metrics") return new Response("404 page not found\n", { status: 404 });
    if (req.method !== "GET" && req.method !== "HEAD") {
      return new Response("Method not allowed\n", { status: 405 });
    }
    return registry.response();
  };
  const { secure } = options;
  // The address is checked before returning, as callers rely on.
  if (!secure) {
    return serveHttp(options.address, handler, { signal: options.signal, name: "metrics" });
  }
  parseBindAddress(options.address);
  return serveSecurely(options.address, handler, secure, options.signal);
}

async function serveSecurely(
  address: string,
  handler: (req: Request) => Response | Promise<Response>,
  secure: NonNullable<ServeMetricsOptions["secure"]>,
  signal: AbortSignal | undefined,
): Promise<HttpEndpoint | undefined> {
  let tls: { cert: string; key: string };
  if (secure.certDir) {
    const dir = secure.certDir.replace(/\/+$/, "");
    tls = {
      cert: await Deno.readTextFile(`${dir}/tls.crt`),
      key: await Deno.readTextFile(`${dir}/tls.key`),
    };
  } else {
    const hosts = secure.hosts ?? ["localhost", "127.0.0.1", "::1"];
    const ca = await createCa("kubeno-metrics-ca");
    const leaf = await issueCert({
      commonName: "kubeno-metrics",
      dnsNames: hosts.filter((h) => !/^[\d.]+$|:/.test(h)),
      ipAddresses: hosts.filter((h) => /^[\d.]+$|:/.test(h)),
      server: true,
    }, ca);
    tls = { cert: leaf.certPem, key: leaf.keyPem };
  }
  return serveHttp(
    address,
    withAuthenticationAndAuthorization(handler, { client: secure.client }),
    { signal, name: "metrics", tls },
  );
}

function renderLabels(labels: string[][]): string {
  if (labels.length === 0) return "";
  return `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
}

function escapeHelp(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function escapeLabel(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/**
 * Formats a sample value or bucket bound as Go's `strconv.FormatFloat(v, 'g', -1, 64)`
 * does, so that `le` labels match client_golang's (`1e-08`, `0.005`, `1e+06`).
 *
 * @param v The value.
 * @returns The text.
 */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  const [mantissa, exp] = v.toExponential().split("e");
  const e = Number(exp);
  if (e >= -4 && e < 6) return String(v);
  return `${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}
