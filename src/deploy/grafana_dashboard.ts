/**
 * A Grafana dashboard for an operator's `/metrics`, as kubebuilder's grafana plugin writes one
 * for controller-runtime's names: reconcile rate, errors and duration per controller, work
 * queue depth per priority and latency, cache sizes, webhook latency, shard ownership and the
 * process. Every query names a family the operator serves (`tests/grafana_dashboard_test.ts`
 * checks them against a live scrape); a family an operator does not have (sharding, webhooks)
 * leaves its panels empty.
 *
 * @module
 */

/** Options of {@linkcode grafanaDashboard}. */
export interface GrafanaDashboardOptions {
  /** The operator's name: the dashboard's title and uid, and the default `job`. */
  name: string;
  /**
   * The Prometheus data source's uid; `${datasource}` lets the viewer pick one.
   * @default "${datasource}"
   */
  datasource?: string;
}

/** One panel: a title, its unit and its PromQL queries (legend per query). */
interface PanelSpec {
  title: string;
  unit: string;
  queries: [expr: string, legend: string][];
  description: string;
}

const SEL = '{job=~"$job", controller=~"$controller"}';
const QSEL = '{job=~"$job", name=~"$controller"}';
const JOB = '{job=~"$job"}';

const ROWS: [string, PanelSpec[]][] = [
  ["Reconciles", [
    {
      title: "Reconciles per second by result",
      unit: "ops",
      description: "controller_runtime_reconcile_total: success, requeue, requeue_after, error",
      queries: [[
        `sum by (controller, result) (rate(controller_runtime_reconcile_total${SEL}[5m]))`,
        "{{controller}} {{result}}",
      ]],
    },
    {
      title: "Reconcile errors per second",
      unit: "ops",
      description: "Errors (retried with backoff) and terminal errors (not retried)",
      queries: [
        [
          `sum by (controller) (rate(controller_runtime_reconcile_errors_total${SEL}[5m]))`,
          "{{controller}} errors",
        ],
        [
          `sum by (controller) (rate(controller_runtime_terminal_reconcile_errors_total${SEL}[5m]))`,
          "{{controller}} terminal",
        ],
        [
          `sum by (controller) (rate(controller_runtime_reconcile_timeouts_total${SEL}[5m]))`,
          "{{controller}} timeouts",
        ],
      ],
    },
    {
      title: "Reconcile duration (p50, p90, p99)",
      unit: "s",
      description: "controller_runtime_reconcile_time_seconds",
      queries: [0.5, 0.9, 0.99].map((q) => [
        `histogram_quantile(${q}, sum by (controller, le) (rate(controller_runtime_reconcile_time_seconds_bucket${SEL}[5m])))`,
        `{{controller}} p${q * 100}`,
      ]),
    },
    {
      title: "Workers busy / allowed",
      unit: "short",
      description: "controller_runtime_active_workers against max_concurrent_reconciles",
      queries: [
        [`sum by (controller) (controller_runtime_active_workers${SEL})`, "{{controller}} active"],
        [
          `sum by (controller) (controller_runtime_max_concurrent_reconciles${SEL})`,
          "{{controller}} max",
        ],
      ],
    },
  ]],
  ["Work queue", [
    {
      title: "Queue depth by priority",
      unit: "short",
      description: "workqueue_depth: keys waiting, by priority (low: initial lists, resyncs)",
      queries: [[
        `sum by (name, priority) (workqueue_depth${QSEL})`,
        "{{name}} priority {{priority}}",
      ]],
    },
    {
      title: "Keys queued per second by cause",
      unit: "ops",
      description: "kubeno_controller_queue_adds_total and workqueue_retries_total",
      queries: [
        [
          `sum by (controller, cause) (rate(kubeno_controller_queue_adds_total${SEL}[5m]))`,
          "{{controller}} {{cause}}",
        ],
        [`sum by (name) (rate(workqueue_retries_total${QSEL}[5m]))`, "{{name}} retries"],
      ],
    },
    {
      title: "Time in queue (p50, p99)",
      unit: "s",
      description: "workqueue_queue_duration_seconds: from add to a worker taking the key",
      queries: [0.5, 0.99].map((q) => [
        `histogram_quantile(${q}, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket${QSEL}[5m])))`,
        `{{name}} p${q * 100}`,
      ]),
    },
    {
      title: "Work duration (p50, p99) and unfinished work",
      unit: "s",
      description: "workqueue_work_duration_seconds, workqueue_unfinished_work_seconds, " +
        "workqueue_longest_running_processor_seconds",
      queries: [
        ...[0.5, 0.99].map((q): [string, string] => [
          `histogram_quantile(${q}, sum by (name, le) (rate(workqueue_work_duration_seconds_bucket${QSEL}[5m])))`,
          `{{name}} p${q * 100}`,
        ]),
        [`max by (name) (workqueue_unfinished_work_seconds${QSEL})`, "{{name}} unfinished"],
        [
          `max by (name) (workqueue_longest_running_processor_seconds${QSEL})`,
          "{{name}} longest",
        ],
      ],
    },
  ]],
  ["Caches and API", [
    {
      title: "Objects in the caches",
      unit: "short",
      description: "kubeno_cache_objects: what the informers hold, by kind",
      queries: [[`sum by (group, kind) (kubeno_cache_objects${JOB})`, "{{kind}}.{{group}}"]],
    },
    {
      title: "Own writes: echoes skipped, cache lag",
      unit: "ops",
      description: "kubeno_controller_own_write_echoes_total, kubeno_controller_cache_lag_total",
      queries: [
        [
          `sum by (controller) (rate(kubeno_controller_own_write_echoes_total${SEL}[5m]))`,
          "{{controller}} echoes",
        ],
        [
          `sum by (controller, outcome) (rate(kubeno_controller_cache_lag_total${SEL}[5m]))`,
          "{{controller}} lag {{outcome}}",
        ],
      ],
    },
    {
      title: "API requests per second by code",
      unit: "reqps",
      description: "rest_client_requests_total",
      queries: [[
        `sum by (method, code) (rate(rest_client_requests_total${JOB}[5m]))`,
        "{{method}} {{code}}",
      ]],
    },
  ]],
  ["Webhooks", [
    {
      title: "Webhook latency (p50, p99)",
      unit: "s",
      description: "controller_runtime_webhook_latency_seconds, by path",
      queries: [0.5, 0.99].map((q) => [
        `histogram_quantile(${q}, sum by (webhook, le) (rate(controller_runtime_webhook_latency_seconds_bucket${JOB}[5m])))`,
        `{{webhook}} p${q * 100}`,
      ]),
    },
    {
      title: "Webhook requests per second by code",
      unit: "reqps",
      description: "controller_runtime_webhook_requests_total",
      queries: [[
        `sum by (webhook, code) (rate(controller_runtime_webhook_requests_total${JOB}[5m]))`,
        "{{webhook}} {{code}}",
      ]],
    },
  ]],
  ["Leader election and shards", [
    {
      title: "Leader",
      unit: "short",
      description: "leader_election_master_status: 1 on the replica that leads",
      queries: [[`max by (name, pod) (leader_election_master_status${JOB})`, "{{name}} {{pod}}"]],
    },
    {
      title: "Shards owned and members",
      unit: "short",
      description: "kubeno_shard_owned (per replica), kubeno_shard_members",
      queries: [
        [`sum by (pod) (kubeno_shard_owned${JOB})`, "{{pod}} owned"],
        [`max(kubeno_shard_members${JOB})`, "members"],
      ],
    },
    {
      title: "Shard hand-offs and drain time",
      unit: "short",
      description: "kubeno_shard_handoffs_total, kubeno_shard_drain_seconds",
      queries: [
        [`sum by (kind) (increase(kubeno_shard_handoffs_total${JOB}[15m]))`, "{{kind}}"],
        [
          `histogram_quantile(0.99, sum by (le) (rate(kubeno_shard_drain_seconds_bucket${JOB}[15m])))`,
          "drain p99 (s)",
        ],
      ],
    },
  ]],
  ["Process", [
    {
      title: "CPU",
      unit: "percentunit",
      description: "process_cpu_seconds_total",
      queries: [[`rate(process_cpu_seconds_total${JOB}[5m])`, "{{pod}}"]],
    },
    {
      title: "Memory",
      unit: "bytes",
      description: "process_resident_memory_bytes",
      queries: [[`process_resident_memory_bytes${JOB}`, "{{pod}}"]],
    },
  ]],
];

/**
 * The operator's Grafana dashboard (schema version 39), with `datasource`, `job` and
 * `controller` variables. Print it with `<operator> manifests --grafana`.
 *
 * @param options The operator's name and the data source.
 * @returns The dashboard, ready for `JSON.stringify` and Grafana's import.
 *
 * @example Every panel queries kubeno's families
 * ```ts
 * import { grafanaDashboard } from "./grafana_dashboard.ts";
 * const d = grafanaDashboard({ name: "myapp-operator" });
 * const exprs = d.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
 * if (!exprs.some((e) => e.includes("controller_runtime_reconcile_total"))) throw new Error();
 * ```
 */
export function grafanaDashboard(options: GrafanaDashboardOptions): GrafanaDashboard {
  const ds = { type: "prometheus", uid: options.datasource ?? "${datasource}" };
  const panels: GrafanaPanel[] = [];
  let id = 1, y = 0;
  for (const [row, specs] of ROWS) {
    panels.push({
      id: id++,
      type: "row",
      title: row,
      collapsed: false,
      gridPos: pos(0, y++, 24, 1),
    });
    specs.forEach((p, i) => {
      const w = specs.length >= 4 ? 6 : specs.length === 3 ? 8 : 12;
      panels.push({
        id: id++,
        type: "timeseries",
        title: p.title,
        description: p.description,
        datasource: ds,
        gridPos: pos(i * w, y, w, 8),
        fieldConfig: { defaults: { unit: p.unit }, overrides: [] },
        options: { legend: { displayMode: "list", placement: "bottom", showLegend: true } },
        targets: p.queries.map(([expr, legendFormat], j) => ({
          refId: String.fromCharCode(65 + j),
          datasource: ds,
          expr,
          legendFormat,
        })),
      });
    });
    y += 8;
  }
  const variable = (name: string, query: string) => ({
    name,
    label: name,
    type: "query",
    datasource: ds,
    query: { query, refId: name },
    definition: query,
    includeAll: true,
    multi: true,
    allValue: ".*",
    current: { selected: true, text: "All", value: "$__all" },
    refresh: 2,
  });
  return {
    uid: options.name.replace(/[^A-Za-z0-9-]/g, "-").slice(0, 40),
    title: `${options.name} (kubeno)`,
    tags: ["kubeno", "operator"],
    timezone: "browser",
    schemaVersion: 39,
    version: 1,
    editable: true,
    time: { from: "now-1h", to: "now" },
    refresh: "30s",
    templating: {
      list: [
        {
          name: "datasource",
          label: "Data source",
          type: "datasource",
          query: "prometheus",
          current: {},
        },
        variable("job", "label_values(controller_runtime_reconcile_total, job)"),
        variable(
          "controller",
          'label_values(controller_runtime_reconcile_total{job=~"$job"}, controller)',
        ),
      ],
    },
    annotations: { list: [] },
    panels,
  };
}

/** A Grafana dashboard, as much of its JSON model as {@linkcode grafanaDashboard} writes. */
export interface GrafanaDashboard {
  /** Stable id: the operator's name. */
  uid: string;
  /** Shown title. */
  title: string;
  /** Search tags. */
  tags: string[];
  /** Time zone of the time axis. */
  timezone: string;
  /** The JSON model version Grafana migrates from. */
  schemaVersion: number;
  /** Revision of the dashboard. */
  version: number;
  /** Whether viewers may edit it. */
  editable: boolean;
  /** The default time range. */
  time: { from: string; to: string };
  /** Auto-refresh interval. */
  refresh: string;
  /** The variables: data source, job, controller. */
  templating: { list: Record<string, unknown>[] };
  /** Annotation queries (none). */
  annotations: { list: unknown[] };
  /** Rows and time-series panels. */
  panels: GrafanaPanel[];
}

/** A row or time-series panel of {@linkcode GrafanaDashboard}. */
export interface GrafanaPanel {
  /** Unique within the dashboard. */
  id: number;
  /** `row` or `timeseries`. */
  type: string;
  /** Shown title. */
  title: string;
  /** What it shows, as a tooltip. */
  description?: string;
  /** Rows only: whether folded. */
  collapsed?: boolean;
  /** Its place on the 24-column grid. */
  gridPos: { x: number; y: number; w: number; h: number };
  /** The data source of its queries. */
  datasource?: { type: string; uid: string };
  /** Unit and overrides. */
  fieldConfig?: { defaults: { unit: string }; overrides: unknown[] };
  /** Legend. */
  options?: Record<string, unknown>;
  /** The PromQL queries. */
  targets?: {
    refId: string;
    datasource: { type: string; uid: string };
    expr: string;
    legendFormat: string;
  }[];
}

function pos(x: number, y: number, w: number, h: number) {
  return { x, y, w, h };
}
