// What kubeno's tracing hooks cost per call, with tracing off (no provider: the default) and
// on (OTEL_DENO=true; spans are exported, so point OTEL_EXPORTER_OTLP_ENDPOINT at a
// collector or Jaeger). A reconcile pays one `inSpan` plus one `activeLink` per event that
// queued it, and each API call one `inSpan`; the baseline is the same work without a hook.
//
//   deno bench -A bench/trace_cost_bench.ts                 # off
//   OTEL_DENO=true deno bench -A bench/trace_cost_bench.ts  # on
import { activeLink, inSpan, tracing } from "../src/util/trace.ts";

const attrs = () => ({ "kubeno.controller": "c", "kubeno.key": "default/a" });
const work = (x: number) => x + 1;

Deno.bench("baseline: the work alone", { group: "sync", baseline: true }, () => {
  work(1);
});
Deno.bench(`inSpan (tracing ${tracing() ? "on" : "off"})`, { group: "sync" }, () => {
  inSpan("reconcile", attrs, () => work(1));
});
Deno.bench(`activeLink (tracing ${tracing() ? "on" : "off"})`, { group: "sync" }, () => {
  activeLink();
});
Deno.bench("baseline: async work alone", { group: "async", baseline: true }, async () => {
  await Promise.resolve(work(1));
});
Deno.bench(`inSpan around async work (tracing ${tracing() ? "on" : "off"})`, {
  group: "async",
}, async () => {
  await inSpan("reconcile", attrs, async () => await Promise.resolve(work(1)));
});
