import assert from "node:assert/strict";
import type { Client } from "../../../client/client.ts";
import { ConfigMap } from "../../../core/kinds.ts";
import type { Condition, KubeObject } from "../../../core/object.ts";
import { resource } from "../../../core/resource.ts";
import { getLogger } from "../../../util/log.ts";
import { EventRecorder } from "../events.ts";
import { reconcile } from "../reconcile.ts";
import { createContext } from "./context.ts";

Deno.test("a context refuses every write once its signal aborted, and sends none", async () => {
  type Thing = KubeObject & { status?: { phase?: string; conditions?: Condition[] } };
  const Thing = resource<Thing>({ group: "a.io", version: "v1", kind: "Thing" });
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
  const { ctx, patchPrimary } = createContext({
    controller: reconcile(Thing, { reconcile: () => {} }),
    client,
    events: new EventRecorder(client, { component: "thing" }),
    log: getLogger(["kubeno", "test"]),
    key: "ns/t",
    primary: structuredClone(primary),
    cached: primary,
    cache: { get: () => undefined, list: () => [] },
    signal: attempt.signal,
  });
  await ctx.patchStatus(primary, { phase: "Before" });
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
  ];
  for (const [what, write] of writes) {
    await assert.rejects(write, (err) => err === reason, `${what} was not refused`);
  }
  assert.deepEqual(sent, [], "a write was sent after the signal aborted");
});
