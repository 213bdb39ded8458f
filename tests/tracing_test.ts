// Seeing inside: the Myapp operator run as a user runs it (`deno run -A examples/myapp.ts`)
// with `OTEL_DENO=true` against a real Jaeger, one `kubectl apply` of a Myapp, and Jaeger's
// query API asked for what it holds: one trace with the watch event, the reconcile it
// started (linked to it and parented under it), the server-side apply of the Deployment and
// the status patch inside the reconcile (each with Deno's own fetch span under it), and the
// webhook's admission spans for the same object; the operator's log records of that work
// carry the same trace and span ids.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { EXAMPLE_ENV, installExample, NO_SERVERS, startExample, waitFor } from "./_helpers.ts";
import {
  findJaeger,
  type JaegerSpan,
  type JaegerTrace,
  parentOf,
  startJaeger,
  tag,
} from "./_jaeger.ts";

const EXAMPLE = new URL("../examples/myapp.ts", import.meta.url).pathname;
const SAMPLE = new URL("../examples/myapp-sample.yaml", import.meta.url).pathname;
const NAME = "myapp-sample";
const jaeger = await findJaeger();

/** The parts of the trace of one `kubectl apply`, found or not yet. */
interface ApplyTrace {
  trace: JaegerTrace;
  event: JaegerSpan;
  reconcile: JaegerSpan;
  apply: JaegerSpan;
  status: JaegerSpan;
}

function ofSample(s: JaegerSpan): boolean {
  return tag(s, "k8s.object.name") === NAME && tag(s, "k8s.namespace.name") === "default";
}

/**
 * Finds the trace of the sample's creation: its `added` watch event, the reconcile parented
 * under it and linked to it, and that reconcile's apply and status patch as its children.
 */
function findApplyTrace(traces: JaegerTrace[]): ApplyTrace | undefined {
  for (const trace of traces) {
    const spans = trace.spans;
    const event = spans.find((s) =>
      s.operationName === "watch event" && ofSample(s) &&
      tag(s, "k8s.kind") === "Myapp" && tag(s, "kubeno.watch.event") === "added"
    );
    if (!event) continue;
    const reconcile = spans.find((s) =>
      s.operationName === "reconcile" && parentOf(trace, s) === event
    );
    if (!reconcile) continue;
    const under = (op: string) =>
      spans.find((s) => s.operationName === op && ofSample(s) && parentOf(trace, s) === reconcile);
    const apply = under("apply deployments");
    const status = under("patch myapps/status");
    if (apply && status) return { trace, event, reconcile, apply, status };
  }
  return undefined;
}

/** The traces that name the sample, one line per span: name, parent, links, tags. */
function describe(traces: JaegerTrace[]): string {
  return traces.filter((t) => t.spans.some(ofSample)).map((t) =>
    `trace ${t.traceID}:\n` + t.spans.map((s) => {
      const parent = parentOf(t, s);
      const links = s.references.filter((r) => r.refType === "FOLLOWS_FROM").map((r) => r.spanID);
      const tags = s.tags.filter((x) => x.key.startsWith("k8s.") || x.key.startsWith("kubeno."))
        .map((x) => `${x.key}=${x.value}`).join(" ");
      return `  ${s.operationName} [${s.spanID}] parent=${parent?.operationName ?? "-"}` +
        ` links=${links.join(",") || "-"} ${tags}`;
    }).join("\n")
  ).join("\n");
}

Deno.test({
  name: jaeger.path
    ? "tracing: one kubectl apply gives one trace from the watch event to the API writes"
    : `tracing: one trace per kubectl apply (skipped: ${jaeger.reason})`,
  ignore: !jaeger.path,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  await using backend = await startJaeger(jaeger.path!);
  await using cp = await startControlPlane();
  const kubeconfig = `--kubeconfig=${cp.kubeconfigPath}`;
  const env = { ...EXAMPLE_ENV };
  const service = `myapp-operator-${crypto.randomUUID().slice(0, 8)}`;

  await installExample(EXAMPLE, kubeconfig, env);

  const operator = startExample(EXAMPLE, [
    kubeconfig,
    "--namespace=default",
    ...NO_SERVERS,
    "--log-format=json",
    "--log-level=debug",
  ], {
    ...env,
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: backend.otlpEndpoint,
    OTEL_SERVICE_NAME: service,
  });
  let found: ApplyTrace | undefined;
  let admissions: { trace: JaegerTrace; span: JaegerSpan }[] = [];
  try {
    await t.step("kubectl apply of the sample is admitted and reconciled", async () => {
      await waitFor(async () => {
        const r = await cp.kubectl("apply", "-f", SAMPLE);
        if (r.code !== 0) throw new Error(r.stderr.trim());
        return true;
      }, { timeoutMs: 60_000, intervalMs: 250, what: "kubectl apply of the sample" });
      await waitFor(async () => {
        const r = await cp.kubectl("get", "myapp", NAME, "-o", "jsonpath={.status.phase}");
        return r.code === 0 && r.stdout.trim() !== "";
      }, { timeoutMs: 30_000, what: "the sample's status phase" });
    });

    await t.step(
      "Jaeger holds one trace: watch event → reconcile → apply, status patch",
      async () => {
        let seen: JaegerTrace[] = [];
        found = await waitFor(
          async () => findApplyTrace(seen = await backend.traces(service)),
          {
            timeoutMs: 30_000,
            intervalMs: 500,
            what: `the trace of the apply in Jaeger (${service})`,
          },
        ).catch((err) => {
          throw new Error(`${err.message}; the traces of the sample:\n${describe(seen)}`);
        });
        const { trace, event, reconcile, apply, status } = found;
        // The reconcile is the event's child (the event queued it: its trigger) and carries
        // the controller's reconcile fields.
        assert.ok(Number(tag(reconcile, "kubeno.reconcile.causes")) >= 1);
        assert.equal(tag(reconcile, "kubeno.controller"), "myapp");
        assert.equal(tag(reconcile, "kubeno.key"), `default/${NAME}`);
        assert.match(String(tag(reconcile, "kubeno.reconcile_id")), /^[0-9a-f-]{36}$/);
        assert.ok(
          ["success", "requeue_after", "requeue"].includes(
            String(tag(reconcile, "kubeno.reconcile.result")),
          ),
          `result: ${tag(reconcile, "kubeno.reconcile.result")}`,
        );
        // The server-side apply: a PATCH of the Deployment, answered 201 (created).
        assert.equal(tag(apply, "http.request.method"), "PATCH");
        assert.equal(tag(apply, "kubeno.client.verb"), "apply");
        assert.equal(tag(apply, "k8s.kind"), "Deployment");
        assert.equal(Number(tag(apply, "http.response.status_code")), 201);
        assert.equal(tag(status, "http.request.method"), "PATCH");
        assert.equal(tag(status, "k8s.subresource"), "status");
        assert.equal(Number(tag(status, "http.response.status_code")), 200);
        // Deno's own fetch spans sit under the client's: the URL is the real request's.
        const fetchUnder = (parent: JaegerSpan) =>
          trace.spans.find((s) => s.operationName === "PATCH" && parentOf(trace, s) === parent);
        const applyFetch = fetchUnder(apply), statusFetch = fetchUnder(status);
        assert.ok(applyFetch && statusFetch, "Deno's fetch spans are children of the client's");
        assert.match(
          String(tag(applyFetch, "url.full")),
          new RegExp(`/apis/apps/v1/namespaces/default/deployments/${NAME}\\?.*force=true`),
        );
        assert.match(String(tag(statusFetch, "url.full")), new RegExp(`/myapps/${NAME}/status\\?`));
        // One trace: every span named above is in it, and the event is its root.
        for (const s of [event, reconcile, apply, status, applyFetch, statusFetch]) {
          assert.equal(s.traceID, trace.traceID);
        }
        assert.equal(parentOf(trace, event), undefined, "the watch event is the trace's root");
        assert.equal(trace.processes[event.processID].serviceName, service);
      },
    );

    await t.step("the webhook's admission spans name the same object", async () => {
      admissions = await waitFor(async () => {
        const traces = await backend.traces(service);
        const spans = traces.flatMap((trace) =>
          trace.spans.filter((s) =>
            s.operationName === "admission" && ofSample(s) &&
            tag(s, "kubeno.admission.operation") === "CREATE"
          ).map((span) => ({ trace, span }))
        );
        const paths = new Set(spans.map((a) => String(tag(a.span, "kubeno.webhook.path"))));
        return [...paths].some((p) => p.startsWith("/mutate-")) &&
          [...paths].some((p) => p.startsWith("/validate-")) && spans;
      }, { timeoutMs: 30_000, intervalMs: 500, what: "the admission spans in Jaeger" });
      for (const { trace, span } of admissions) {
        assert.equal(tag(span, "k8s.kind"), "Myapp");
        assert.equal(tag(span, "kubeno.admission.allowed"), true);
        // Under Deno.serve's own server span for the POST the API server sent.
        const server = parentOf(trace, span);
        assert.equal(server?.operationName, "POST", "the admission span's parent is Deno.serve's");
      }
    });

    await t.step("log records of that work carry its trace and span ids", () => {
      const records = operator.logs().split("\n").filter((l) => l.startsWith("{")).map((l) =>
        JSON.parse(l) as Record<string, unknown>
      );
      const admissionIds = new Set(admissions.map((a) => `${a.span.traceID}/${a.span.spanID}`));
      const admissionLogs = records.filter((r) =>
        r.logger === "kubeno.webhook" && admissionIds.has(`${r.trace_id}/${r.span_id}`)
      );
      assert.ok(
        admissionLogs.length >= 2,
        `the webhook's debug records carry their admission span's ids:\n${
          records.filter((r) => r.logger === "kubeno.webhook").map((r) => JSON.stringify(r))
            .join("\n")
        }`,
      );
      // Records written outside any span carry none.
      const started = records.find((r) => String(r.msg).startsWith("Controller myapp started"));
      assert.ok(started, "the controller's start is logged");
      assert.equal(started.trace_id, undefined);
    });

    await t.step("kubectl delete: the finalizer's cleanup is a span of its reconcile", async () => {
      const r = await cp.kubectl("delete", "myapp", NAME, "--wait=true", "--timeout=30s");
      assert.equal(r.code, 0, r.stderr);
      const cleanup = await waitFor(async () => {
        for (const trace of await backend.traces(service)) {
          const span = trace.spans.find((s) => s.operationName === "finalize");
          const reconcile = span && parentOf(trace, span);
          if (reconcile?.operationName === "reconcile" && ofSample(reconcile)) {
            return { trace, span: span!, reconcile };
          }
        }
      }, { timeoutMs: 30_000, intervalMs: 500, what: "the finalize span in Jaeger" });
      assert.equal(tag(cleanup.span, "kubeno.finalizer"), "apps.kubeno.dev/cleanup");
      // What triggered it: the watch event of the deletion (deletionTimestamp set: modified).
      const trigger = parentOf(cleanup.trace, cleanup.reconcile);
      assert.equal(trigger?.operationName, "watch event");
      assert.equal(tag(trigger!, "kubeno.watch.event"), "modified");
      // "Cleaned up" is logged by the user's finalize, inside that span.
      const line = await waitFor(
        () => operator.lines(/Cleaned up default\/myapp-sample/).map((l) => JSON.parse(l)).at(0),
        { what: "the Cleaned up log record" },
      );
      assert.equal(line.trace_id, cleanup.trace.traceID);
      assert.equal(line.span_id, cleanup.span.spanID);
      assert.equal(line.reconcileID, tag(cleanup.reconcile, "kubeno.reconcile_id"));
    });
  } catch (err) {
    const logs = operator.logs().split("\n").slice(-30).join("\n");
    throw new Error(
      `${(err as Error).message}\noperator log tail:\n${logs}\njaeger log tail:\n${await backend
        .logTail()}`,
      {
        cause: err,
      },
    );
  } finally {
    await operator.stop();
  }
});
