import assert from "node:assert/strict";
import type { Client } from "../../../client/client.ts";
import type { Condition } from "../../../core/object.ts";
import { reconcile, type ReconcileOptions } from "../reconcile.ts";
import { Thing, thingContext } from "./_context_fixture_test.ts";

const ready = { type: "Ready", status: "True", reason: "Done" } as const;

/** A context on a fake client that records each status write's body and answers it. */
function setup(status?: Thing["status"], options?: Partial<ReconcileOptions<Thing>>) {
  const writes: Record<string, unknown>[] = [];
  let rv = 1;
  const client = {
    patchStatus: (_res: unknown, name: string, body: { status: Record<string, unknown> }) => {
      writes.push(body.status);
      return Promise.resolve({
        ...primary,
        metadata: { ...primary.metadata, name, resourceVersion: String(++rv) },
        status: { ...primary.status, ...body.status },
      });
    },
  } as unknown as Client;
  const primary: Thing = {
    apiVersion: "a.io/v1",
    kind: "Thing",
    metadata: { name: "t", namespace: "ns", uid: "u1", resourceVersion: "1", generation: 3 },
    ...(status ? { status } : {}),
  };
  const handle = thingContext(client, primary, new AbortController().signal, options);
  return { ...handle, primary, writes };
}

Deno.test("a reconcile's status and conditions are written once, merged, when it returns", async () => {
  const { ctx, finish, primary, writes } = setup({ phase: "Old" });
  await finish(async () => {
    const patched = await ctx.patchStatus(primary, { phase: "Running" });
    assert.equal(patched.status?.phase, "Running", "patchStatus returns the pending view");
    const conditioned = await ctx.setCondition(patched, ready);
    assert.equal(conditioned.status?.phase, "Running");
    assert.equal(conditioned.status?.conditions?.[0].type, "Ready");
    await ctx.setCondition(primary, { type: "Degraded", status: "False", reason: "Fine" });
    assert.equal(writes.length, 0, "nothing is written before the reconcile returns");
  });
  assert.equal(writes.length, 1, "one status write");
  assert.equal(writes[0].phase, "Running");
  const types = (writes[0].conditions as Condition[]).map((c) => c.type);
  assert.deepEqual(types, ["Ready", "Degraded"], "conditions set one after another accumulate");
});

Deno.test("ctx.flushStatus writes what is pending at once; the end writes only what came after", async () => {
  const { ctx, finish, primary, writes } = setup();
  await finish(async () => {
    await ctx.patchStatus(primary, { phase: "Starting" });
    const stored = await ctx.flushStatus();
    assert.equal(stored.metadata.resourceVersion, "2", "the server's answer");
    assert.deepEqual(writes, [{ phase: "Starting" }]);
    await ctx.flushStatus();
    assert.equal(writes.length, 1, "nothing pending, nothing sent");
    await ctx.setCondition(primary, ready);
  });
  assert.equal(writes.length, 2);
  assert.deepEqual(Object.keys(writes[1]), ["conditions"]);
});

Deno.test("a reconcile that throws still writes what it set, and its error settles the attempt", async () => {
  const { ctx, finish, primary, writes } = setup();
  const failure = new Error("Cannot reconcile ns/t: on purpose");
  await assert.rejects(
    finish(async () => {
      await ctx.patchStatus(primary, { phase: "Failed" });
      throw failure;
    }, 3),
    (err) => err === failure,
  );
  assert.deepEqual(writes, [{ phase: "Failed" }], "no observedGeneration after a failure");
});

Deno.test("observedGeneration: set by the framework when the schema has it, not with the opt-out", async () => {
  const Crd = {
    ...Thing,
    crd: () => ({
      spec: {
        versions: [{
          name: "v1",
          schema: {
            openAPIV3Schema: {
              properties: { status: { properties: { observedGeneration: { type: "integer" } } } },
            },
          },
        }],
      },
    }),
  };
  assert.equal(reconcile(Crd, { reconcile: () => {} }).observedGeneration, true);
  assert.equal(
    reconcile(Crd, { reconcile: () => {}, observedGeneration: false }).observedGeneration,
    undefined,
  );
  assert.equal(reconcile(Thing, { reconcile: () => {} }).observedGeneration, undefined);

  // Beside what the reconcile set, in its one write.
  const a = setup();
  await a.finish(() => a.ctx.patchStatus(a.primary, { phase: "Running" }), 3);
  assert.deepEqual(a.writes, [{ observedGeneration: 3, phase: "Running" }]);
  // Alone, when the reconcile set nothing; skipped when the server holds it already.
  const b = setup({ phase: "Running" });
  await b.finish(() => {}, 3);
  assert.deepEqual(b.writes, [{ observedGeneration: 3 }]);
  const c = setup({ phase: "Running", observedGeneration: 3 });
  await c.finish(() => {}, 3);
  assert.deepEqual(c.writes, [], "nothing to change, nothing sent");
  // A value the reconcile sets itself wins.
  const d = setup();
  await d.finish(() => d.ctx.patchStatus(d.primary, { observedGeneration: 2 }), 3);
  assert.deepEqual(d.writes, [{ observedGeneration: 2 }]);
});
