// util/trace.ts against a tiny in-memory tracer provider and an AsyncLocalStorage context
// manager registered through @opentelemetry/api (what Deno registers with OTEL_DENO=true).
import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Context,
  context,
  type ContextManager,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  type SpanOptions,
  trace,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { activeIds, activeLink, inSpan, tracing } from "./trace.ts";

interface Recorded {
  name: string;
  ctx: SpanContext;
  parent?: string;
  links: string[];
  attributes: Record<string, unknown>;
  status?: number;
  ended: number;
}

const recorded: Recorded[] = [];
let next = 1;
const hex = (n: number, len: number) => n.toString(16).padStart(len, "0");

class MemoryTracer implements Tracer {
  startSpan(name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span {
    const parent = trace.getSpanContext(ctx);
    const id = next++;
    const rec: Recorded = {
      name,
      ctx: { traceId: parent?.traceId ?? hex(id, 32), spanId: hex(id, 16), traceFlags: 1 },
      parent: parent?.spanId,
      links: (options.links ?? []).map((l) => l.context.spanId),
      attributes: { ...options.attributes },
      ended: 0,
    };
    recorded.push(rec);
    const span: Span = {
      spanContext: () => rec.ctx,
      setAttribute: (k, v) => (rec.attributes[k] = v, span),
      setAttributes: (a) => (Object.assign(rec.attributes, a), span),
      addEvent: () => span,
      addLink: () => span,
      addLinks: () => span,
      setStatus: (s) => (rec.status = s.code, span),
      updateName: () => span,
      end: () => void rec.ended++,
      isRecording: () => true,
      recordException: () => {},
    };
    return span;
  }
  startActiveSpan(): never {
    throw new Error("Not used by trace.ts");
  }
}

const als = new AsyncLocalStorage<Context>();
const manager: ContextManager = {
  active: () => als.getStore() ?? ROOT_CONTEXT,
  with: (ctx, fn, thisArg, ...args) => als.run(ctx, () => fn.call(thisArg, ...args)),
  bind: (_ctx, target) => target,
  enable: () => manager,
  disable: () => manager,
};

Deno.test("tracing is off until a provider is registered, and then nothing is recorded", () => {
  assert.equal(tracing(), false);
  assert.equal(inSpan("x", {}, () => activeLink()), undefined);
  assert.equal(activeIds(), undefined);
});

Deno.test("inSpan parents, links, ends once and records failures", async (t) => {
  context.setGlobalContextManager(manager);
  trace.setGlobalTracerProvider({ getTracer: () => new MemoryTracer() } as TracerProvider);
  try {
    // Registered after trace.ts loaded (without the API): seen once the API has loaded.
    tracing();
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(tracing(), true);
    await t.step(
      "a watch event's link becomes the reconcile's parent; later ones links",
      async () => {
        const first = inSpan("watch event", {}, () => activeLink())!;
        const second = inSpan("watch event", {}, () => activeLink())!;
        const ids = await inSpan(
          "reconcile",
          { "kubeno.key": "default/a", skipped: undefined },
          async () => {
            await new Promise((r) => setTimeout(r, 1));
            return inSpan("apply deployments", {}, () => activeIds());
          },
          { parent: first, links: [second], root: true },
        );
        const [ev1, ev2, rec, apply] = recorded.slice(-4);
        assert.equal(rec.parent, ev1.ctx.spanId);
        assert.equal(rec.ctx.traceId, ev1.ctx.traceId, "the reconcile joins the event's trace");
        assert.deepEqual(rec.links, [ev2.ctx.spanId], "no link repeats the parent");
        assert.deepEqual(rec.attributes, { "kubeno.key": "default/a" });
        assert.equal(
          apply.parent,
          rec.ctx.spanId,
          "spans across awaits are the reconcile's children",
        );
        assert.deepEqual(ids, { trace_id: ev1.ctx.traceId, span_id: apply.ctx.spanId });
        for (const r of [ev1, ev2, rec, apply]) assert.equal(r.ended, 1);
      },
    );
    await t.step("root starts a new trace inside another span", () => {
      inSpan("outer", {}, () => inSpan("election", {}, () => {}, { root: true }));
      const [outer, election] = recorded.slice(-2);
      assert.equal(election.parent, undefined);
      assert.notEqual(election.ctx.traceId, outer.ctx.traceId);
    });
    await t.step("a throw or rejection marks the span failed and is passed on", async () => {
      assert.throws(() =>
        inSpan("boom", {}, () => {
          throw new Error("Sync boom");
        }), /Sync boom/);
      await assert.rejects(
        inSpan("boom", {}, () => Promise.reject(new Error("Async boom"))),
        /Async boom/,
      );
      for (const r of recorded.slice(-2)) {
        assert.equal(r.status, 2);
        assert.equal(r.ended, 1);
      }
    });
  } finally {
    trace.disable();
    context.disable();
  }
  assert.equal(tracing(), false, "off again once the provider is gone");
});
