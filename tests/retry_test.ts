// The retry policy and the error status against a real kube-apiserver: a reconcile that always
// fails with `retry: { maxAttempts: 3 }` is attempted exactly 3 times, then a
// `RetriesExhausted` Warning Event and a `Ready=False` condition appear, and a spec change
// starts attempts again; `onError`'s status is written once per failed attempt while the
// retries go on; a `TerminalError` ends retries after one attempt, its error status written.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { Event } from "../src/core/kinds.ts";
import { findCondition } from "../src/core/conditions.ts";
import { reconcile, TerminalError } from "../src/runtime/controller/reconcile.ts";
import { uniqueName, waitFor } from "./_helpers.ts";
import { createNamespace, installStack, runObserved, Stack } from "./_stack.ts";

/** One attempt: the spec it saw, and the status an earlier onError left. */
interface Attempt {
  value: string;
  observed: string | undefined;
}

/** When each attempt started, per object name (`performance.now()`). */
const startedAt = new Map<string, number[]>();

/** `client`, counting the status patches per object name. */
function countingStatus(client: Client): { client: Client; patches: Map<string, number> } {
  const patches = new Map<string, number>();
  const counting = new Proxy(client, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === "patchStatus") {
        return (...args: Parameters<Client["patchStatus"]>) => {
          patches.set(args[1], (patches.get(args[1]) ?? 0) + 1);
          return target.patchStatus(...args);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { client: counting, patches };
}

Deno.test("retry.maxAttempts, the RetriesExhausted Event and condition, onError and TerminalError", async (t) => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  await installStack(admin);
  const ns = await createNamespace(admin, uniqueName("retry"));
  const { client, patches } = countingStatus(admin);
  const attempts = new Map<string, Attempt[]>();
  const controller = reconcile(Stack, {
    name: "stack-retry",
    primary: { labelSelector: "!hang" },
    retry: { baseDelayMs: 200, maxAttempts: 3 },
    reconcile(s) {
      const name = s.metadata.name!;
      startedAt.set(name, [...startedAt.get(name) ?? [], performance.now()]);
      attempts.set(name, [
        ...attempts.get(name) ?? [],
        { value: s.spec.value, observed: s.status?.observed },
      ]);
      if (name === "terminal") throw new TerminalError(`Cannot use value "${s.spec.value}"`);
      throw new Error(`boom ${s.spec.value}`);
    },
    onError(_s, error, ctx) {
      const { attempt, last } = ctx.retry;
      return { observed: `${(error as Error).message}: attempt ${attempt}${last ? " last" : ""}` };
    },
  });
  await using _run = await runObserved(controller, client, ns);
  const eventsOf = async (name: string, reason: string) =>
    (await admin.list(Event, { namespace: ns, fieldSelector: `involvedObject.name=${name}` }))
      .items.filter((e) => e.reason === reason);
  // Long enough for more retries 800 and 1,600 ms after the last, were any scheduled.
  const settle = () => new Promise((resolve) => setTimeout(resolve, 2_500));

  await t.step("three attempts, then an Event and a condition, and nothing more", async () => {
    await admin.create(Stack, {
      metadata: { name: "always", namespace: ns },
      spec: { value: "v1" },
    });
    const [ev] = await waitFor(async () => {
      const found = await eventsOf("always", "RetriesExhausted");
      return found.length ? found : undefined;
    }, { what: "the RetriesExhausted Event" });
    assert.equal(ev.type, "Warning");
    assert.equal(
      ev.message,
      "Reconcile failed 3 times (retry.maxAttempts 3), not retried until the object changes; last error: boom v1",
    );
    const ready = await waitFor(async () => {
      const s = await admin.get(Stack, "always", { namespace: ns });
      return findCondition(s.status?.conditions, "Ready");
    }, { what: "the Ready condition" });
    assert.equal(ready.status, "False");
    assert.equal(ready.reason, "RetriesExhausted");
    assert.equal(ready.message, ev.message);
    await settle();
    // Each attempt saw the error status of the one before: written before its retry.
    assert.deepEqual(attempts.get("always"), [
      { value: "v1", observed: undefined },
      { value: "v1", observed: "boom v1: attempt 1" },
      { value: "v1", observed: "boom v1: attempt 2" },
    ]);
    // The waits of retry.baseDelayMs, doubling (not the default 5 ms): a lower bound only.
    const [a1, a2, a3] = startedAt.get("always")!;
    assert.ok(a2 - a1 >= 200 && a3 - a2 >= 400, `attempts at +${a2 - a1}, +${a3 - a2} ms`);
    const s = await admin.get(Stack, "always", { namespace: ns });
    assert.equal(s.status?.observed, "boom v1: attempt 3 last");
    // One status write per failed attempt; the last one carries the condition too.
    assert.equal(patches.get("always"), 3);
  });

  await t.step("a spec change starts the attempts again, from 1", async () => {
    await admin.patch(Stack, "always", { spec: { value: "v2" } }, { namespace: ns });
    await waitFor(() => attempts.get("always")!.length >= 6 || undefined, {
      what: "three more attempts",
    });
    await waitFor(async () => {
      const s = await admin.get(Stack, "always", { namespace: ns });
      return s.status?.observed === "boom v2: attempt 3 last" || undefined;
    }, { what: "the last error status of v2" });
    await settle();
    assert.deepEqual(attempts.get("always")!.slice(3), [
      { value: "v2", observed: "boom v1: attempt 3 last" },
      { value: "v2", observed: "boom v2: attempt 1" },
      { value: "v2", observed: "boom v2: attempt 2" },
    ]);
    const s = await admin.get(Stack, "always", { namespace: ns });
    assert.match(findCondition(s.status?.conditions, "Ready")!.message, /last error: boom v2$/);
  });

  await t.step(
    "after run.timeoutMs cut an attempt, its error status is still written",
    async () => {
      const hung = reconcile(Stack, {
        name: "stack-retry-timeout",
        primary: { labelSelector: "hang" },
        retry: { baseDelayMs: 100, maxAttempts: 2 },
        run: { timeoutMs: 300 },
        // Never settles: each attempt is cut by its bound, its context then refuses writes.
        reconcile: () => new Promise(() => {}),
        onError: (_s, error, ctx) => ({
          observed: `${(error as Error).name}: attempt ${ctx.retry.attempt}${
            ctx.retry.last ? " last" : ""
          }`,
        }),
      });
      await using _hung = await runObserved(hung, client, ns);
      await admin.create(Stack, {
        metadata: { name: "hung", namespace: ns, labels: { hang: "yes" } },
        spec: { value: "x" },
      });
      const s = await waitFor(async () => {
        const s = await admin.get(Stack, "hung", { namespace: ns });
        return findCondition(s.status?.conditions, "Ready") ? s : undefined;
      }, { what: "the RetriesExhausted condition after two cut attempts" });
      assert.equal(s.status?.observed, "TimeoutError: attempt 2 last");
      assert.equal(findCondition(s.status?.conditions, "Ready")?.reason, "RetriesExhausted");
      assert.equal(patches.get("hung"), 2, "the last error status and the condition in one write");
    },
  );

  await t.step(
    "a TerminalError ends retries after one attempt, its error status written",
    async () => {
      await admin.create(Stack, {
        metadata: { name: "terminal", namespace: ns },
        spec: { value: "bad" },
      });
      await waitFor(async () => {
        const s = await admin.get(Stack, "terminal", { namespace: ns });
        return s.status?.observed === 'Cannot use value "bad": attempt 1 last' || undefined;
      }, { what: "the terminal error status" });
      await waitFor(
        async () => (await eventsOf("terminal", "ReconcileFailed")).length > 0 || undefined,
        {
          what: "the ReconcileFailed Event",
        },
      );
      await settle();
      assert.equal(attempts.get("terminal")?.length, 1);
      assert.equal(patches.get("terminal"), 1);
      const s = await admin.get(Stack, "terminal", { namespace: ns });
      assert.equal(
        findCondition(s.status?.conditions, "Ready"),
        undefined,
        "not retries exhausted",
      );
      assert.deepEqual(await eventsOf("terminal", "RetriesExhausted"), []);
    },
  );
});
