import assert from "node:assert/strict";
import type { Client } from "../../../client/client.ts";
import { ConfigMap } from "../../../core/kinds.ts";
import { type Thing, thingContext } from "./_context_fixture_test.ts";

Deno.test("a context refuses every write once its signal aborted, and sends none", async () => {
  const sent: string[] = [];
  const answer = (verb: string) => (..._args: unknown[]) => {
    sent.push(verb);
    return Promise.resolve({ metadata: { name: "t", namespace: "ns", resourceVersion: "2" } });
  };
  const client = Object.fromEntries(
    ["apply", "create", "replace", "patch", "patchStatus", "delete", "get"].map((
      v,
    ) => [v, answer(v)]),
  ) as unknown as Client;
  const primary: Thing = {
    apiVersion: "a.io/v1",
    kind: "Thing",
    metadata: { name: "t", namespace: "ns", uid: "u1", resourceVersion: "1" },
  };
  const attempt = new AbortController();
  const { ctx, patchPrimary } = thingContext(client, primary, attempt.signal);
  await ctx.patchStatus(primary, { phase: "Before" });
  await ctx.flushStatus();
  assert.deepEqual(sent, ["patchStatus"], "writes are sent while the signal has not aborted");
  sent.length = 0;

  const reason = new DOMException('Reconcile of "ns/t" timed out after 10 ms', "TimeoutError");
  attempt.abort(reason);
  const cm = { metadata: { name: "c" } };
  const writes: [string, () => Promise<unknown>][] = [
    ["apply", () => ctx.apply(ConfigMap, cm)],
    ["create", () => ctx.create(ConfigMap, cm)],
    ["update", () => ctx.update(ConfigMap, { metadata: { name: "c", resourceVersion: "1" } })],
    ["patch", () => ctx.patch(ConfigMap, "c", { data: { a: "b" } })],
    ["delete", () => ctx.delete(ConfigMap, "c")],
    ["patchStatus", () => ctx.patchStatus(primary, { phase: "After" })],
    [
      "setCondition",
      () => ctx.setCondition(primary, { type: "Ready", status: "True", reason: "Done" }),
    ],
    ["finalizer write", () => patchPrimary(() => ({ metadata: { finalizers: ["a.io/x"] } }))],
    ["flushStatus", () => ctx.flushStatus()],
  ];
  for (const [what, write] of writes) {
    await assert.rejects(write, (err) => err === reason, `${what} was not refused`);
  }
  assert.deepEqual(sent, [], "a write was sent after the signal aborted");
});
