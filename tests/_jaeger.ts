// A real trace backend for the tracing tests: Jaeger v2 (all-in-one, in-memory storage),
// found or built like helm ($KUBENO_JAEGER, then the cache folder of the pinned Kubernetes
// version, where testenv/build_jaeger.sh puts it), started on free loopback ports with its
// own config (only the OTLP/HTTP receiver and the query API: none of the fixed ports of
// Jaeger's default config, which other tests or a second Jaeger would collide on), and read
// through its HTTP query API.
import { findTestenvTool, type ToolBinary } from "./_testenv_tool.ts";
import { freePort, Supervised } from "../src/testing/process.ts";
import { waitFor } from "./_helpers.ts";

/** Where jaeger is, or why there is none. */
export type JaegerBinary = ToolBinary;

/**
 * Finds (or builds) jaeger.
 *
 * @returns The path, or the reason it cannot be had.
 */
export function findJaeger(): Promise<JaegerBinary> {
  return findTestenvTool("jaeger");
}

/** A span as Jaeger's query API (`/api/traces`) returns it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: "CHILD_OF" | "FOLLOWS_FROM"; traceID: string; spanID: string }[];
  tags: { key: string; type: string; value: unknown }[];
  processID: string;
}

/** A trace as Jaeger's query API returns it. */
export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

/** The value of a span's tag, or undefined. */
export function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}

/** The span's parent (its CHILD_OF reference) within `trace`, or undefined. */
export function parentOf(trace: JaegerTrace, span: JaegerSpan): JaegerSpan | undefined {
  const ref = span.references.find((r) => r.refType === "CHILD_OF");
  return ref && trace.spans.find((s) => s.spanID === ref.spanID);
}

/** A running Jaeger. */
export interface Jaeger extends AsyncDisposable {
  /** For `OTEL_EXPORTER_OTLP_ENDPOINT`: the OTLP/HTTP receiver. */
  otlpEndpoint: string;
  /** Base URL of the query API. */
  queryUrl: string;
  /** The traces of `service` (up to `limit`, newest first). */
  traces(service: string, limit?: number): Promise<JaegerTrace[]>;
  /** The last lines of Jaeger's log. */
  logTail(): Promise<string>;
}

/**
 * Starts Jaeger on free loopback ports and waits until its query API answers.
 *
 * @param bin The jaeger binary.
 * @returns The running Jaeger; dispose of it to stop it and remove its folder.
 */
export async function startJaeger(bin: string): Promise<Jaeger> {
  const dir = await Deno.makeTempDir({ prefix: "kubeno-jaeger-" });
  const otlp = freePort(), http = freePort(), grpc = freePort();
  const config = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 20000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${http}
    grpc:
      endpoint: 127.0.0.1:${grpc}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlp}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
  await Deno.writeTextFile(`${dir}/config.yaml`, config);
  const proc = new Supervised(
    "jaeger",
    bin,
    ["--config", `${dir}/config.yaml`],
    `${dir}/jaeger.log`,
  );
  const queryUrl = `http://127.0.0.1:${http}`;
  const stop = async () => {
    await proc.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    await waitFor(async () => {
      if (proc.exitCode !== undefined) {
        throw new Error(`Jaeger exited ${proc.exitCode}: ${await proc.logTail()}`);
      }
      const res = await fetch(`${queryUrl}/api/services`);
      await res.body?.cancel();
      return res.ok;
    }, { timeoutMs: 30_000, intervalMs: 100, what: "Jaeger's query API" });
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    otlpEndpoint: `http://127.0.0.1:${otlp}`,
    queryUrl,
    async traces(service, limit = 200) {
      const q = new URLSearchParams({ service, limit: String(limit), lookback: "1h" });
      const res = await fetch(`${queryUrl}/api/traces?${q}`);
      if (!res.ok) {
        throw new Error(`Jaeger /api/traces answered ${res.status}: ${await res.text()}`);
      }
      return ((await res.json()) as { data: JaegerTrace[] | null }).data ?? [];
    },
    logTail: () => proc.logTail(),
    [Symbol.asyncDispose]: stop,
  };
}
