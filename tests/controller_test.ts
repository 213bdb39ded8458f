// Controllers against a real kube-apiserver: a CRD-backed controller owning ConfigMaps
// converges 500 objects, owned changes re-trigger the owner, predicates filter, finalizers
// gate deletion, conflicts and errors retry with per-key backoff, terminal errors do not,
// no key is ever reconciled twice at once, and a bare ControllerRuntime maps events to keys. One control plane for the file; each step
// runs its own manager scoped to its own namespace.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { isConflict, isNotFound } from "../src/client/errors/api_error.ts";
import { type Client, createClient } from "../src/client/client.ts";
import { EventRecorder } from "../src/runtime/controller/events.ts";
import { ConfigMap, Event, Secret } from "../src/core/kinds.ts";
import { createManager, type ManagerOptions } from "../src/runtime/manager/manager.ts";
import { deletionStarted, generationChanged, or } from "../src/runtime/controller/predicates.ts";
import type { RateLimiter } from "../src/runtime/queue/rate_limiter.ts";
import { reconcile, requeue, TerminalError } from "../src/runtime/controller/reconcile.ts";
import { ControllerRuntime } from "../src/runtime/controller/pipeline/runner.ts";
import { InformerFactory } from "../src/runtime/cache/informer_factory.ts";
import { mapConcurrent, recordingLimiter, uniqueName, waitFor } from "./_helpers.ts";
import { createNamespace, installStack, Stack } from "./_stack.ts";

type StackObj = ReturnType<typeof Stack.parse>;

/** Starts a manager on `client` scoped to `namespace`; returns a function that stops it. */
function run(client: Client, namespace: string, options: Omit<ManagerOptions, "client">) {
  const stop = new AbortController();
  const manager = createManager({ client, namespaces: [namespace], ...options });
  const done = manager.start(stop.signal);
  return {
    manager,
    async stop() {
      stop.abort();
      await done;
    },
  };
}

const stackObj = (name: string, namespace: string, value: string) => ({
  metadata: { name, namespace },
  spec: { value },
});

Deno.test("controllers against a real API server", async (t) => {
  await using cp = await startControlPlane();
  using client = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  await installStack(client);

  await t.step(
    "a controller owning ConfigMaps converges 500 objects; never two workers on one key",
    async () => {
      const ns = await createNamespace(client, uniqueName("load"));
      const active = new Set<string>();
      let overlaps = 0;
      let maxParallel = 0;
      const controller = reconcile(Stack, {
        name: "stack-load",
        owns: [ConfigMap],
        run: { maxConcurrent: 8 },
        async reconcile(s, ctx) {
          if (active.has(ctx.key)) overlaps++;
          active.add(ctx.key);
          maxParallel = Math.max(maxParallel, active.size);
          try {
            await ctx.apply(ConfigMap, {
              metadata: { name: `${s.metadata.name}-cm` },
              data: { value: s.spec.value },
            });
            await ctx.patchStatus(s, { observed: s.spec.value });
          } finally {
            active.delete(ctx.key);
          }
        },
      });
      const m = run(client, ns, { controllers: [controller] });
      try {
        const n = 500;
        const t0 = performance.now();
        await mapConcurrent(
          Array.from({ length: n }, (_, i) => i),
          32,
          (i) => client.create(Stack, stackObj(`s-${i}`, ns, `v-${i}`)),
        );
        const created = performance.now() - t0;
        await waitFor(async () => {
          const cms = await client.list(ConfigMap, { namespace: ns, labelSelector: "" });
          const ok = cms.items.filter((cm) => /^s-\d+-cm$/.test(cm.metadata.name!)).length;
          if (ok < n) return false;
          const stacks = await client.list(Stack, { namespace: ns });
          return stacks.items.every((s) => s.status?.observed === s.spec.value);
        }, { what: `${n} stacks to converge`, timeoutMs: 120_000, intervalMs: 200 });
        const converged = performance.now() - t0;
        console.log(
          `converge ${n}: created in ${Math.round(created)} ms, converged in ${
            Math.round(converged)
          } ms, max parallel reconciles ${maxParallel}`,
        );
        const cm0 = await client.get(ConfigMap, "s-0-cm", { namespace: ns });
        const s0 = await client.get(Stack, "s-0", { namespace: ns });
        assert.equal(cm0.data?.value, "v-0");
        assert.deepEqual(cm0.metadata.ownerReferences, [{
          apiVersion: "ctl.kubeno.dev/v1",
          kind: "Stack",
          name: "s-0",
          uid: s0.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        }]);
        assert.ok(cm0.metadata.managedFields?.some((f) => f.manager === "stack-load"));

        // An owned object changed behind the controller's back is put back...
        await client.patch(ConfigMap, "s-1-cm", { data: { value: "tampered" } }, {
          namespace: ns,
        });
        await waitFor(
          async () =>
            (await client.get(ConfigMap, "s-1-cm", { namespace: ns })).data?.value === "v-1",
          {
            what: "the tampered ConfigMap to be restored",
          },
        );
        // ...and a deleted one is recreated.
        const old = await client.get(ConfigMap, "s-2-cm", { namespace: ns });
        await client.delete(ConfigMap, "s-2-cm", { namespace: ns });
        await waitFor(async () => {
          const cm = await client.get(ConfigMap, "s-2-cm", { namespace: ns }).catch(() => null);
          return cm && cm.metadata.uid !== old.metadata.uid && cm.data?.value === "v-2";
        }, { what: "the deleted ConfigMap to be recreated" });

        // Many events per key, on many keys at once.
        const keys = Array.from({ length: 20 }, (_, i) => `s-${i}`);
        await mapConcurrent(keys, 20, async (name) => {
          for (let round = 0; round < 10; round++) {
            await client.patch(Stack, name, { spec: { value: `${name}-r${round}` } }, {
              namespace: ns,
            });
          }
        });
        await waitFor(async () => {
          const cms = await client.list(ConfigMap, { namespace: ns });
          const byName = new Map(cms.items.map((cm) => [cm.metadata.name, cm.data?.value]));
          return keys.every((k) => byName.get(`${k}-cm`) === `${k}-r9`);
        }, { what: "hammered stacks to converge" });
        assert.equal(overlaps, 0, "a key was reconciled by two workers at once");
        assert.ok(maxParallel > 1, `reconciles never ran in parallel (max ${maxParallel})`);
      } finally {
        await m.stop();
      }
    },
  );

  await t.step(
    "predicates: or(generationChanged, deletionStarted) filters metadata and status writes",
    async () => {
      const ns = await createNamespace(client, uniqueName("pred"));
      const seen = new Map<string, number[]>();
      const controller = reconcile(Stack, {
        name: "stack-pred",
        primary: { predicates: [or(generationChanged, deletionStarted)] },
        watches: [{
          resource: Secret,
          map: (s) =>
            s.metadata.labels?.stack ? [`${s.metadata.namespace}/${s.metadata.labels.stack}`] : [],
        }],
        async reconcile(s, ctx) {
          seen.set(s.metadata.name!, [
            ...(seen.get(s.metadata.name!) ?? []),
            s.metadata.generation!,
          ]);
          // A status write: filtered by generationChanged, so it must not loop.
          await ctx.setCondition(s, { type: "Ready", status: "True", reason: "Seen" });
        },
      });
      const m = run(client, ns, { controllers: [controller] });
      const count = (name: string) => seen.get(name)?.length ?? 0;
      try {
        await client.create(Stack, stackObj("a", ns, "1"));
        await client.create(Stack, stackObj("b", ns, "1"));
        await waitFor(() => count("a") === 1 && count("b") === 1, { what: "first reconciles" });
        const a = await client.get(Stack, "a", { namespace: ns });
        assert.equal(a.status?.conditions?.[0].observedGeneration, 1);
        // A label change on a is filtered; b's spec change is a barrier: events of one informer
        // are handled in order, and one worker takes keys first in, first out.
        await client.patch(Stack, "a", { metadata: { labels: { x: "y" } } }, { namespace: ns });
        await client.patch(Stack, "a", { metadata: { annotations: { x: "y" } } }, {
          namespace: ns,
        });
        await client.patch(Stack, "b", { spec: { value: "2" } }, { namespace: ns });
        await waitFor(() => count("b") === 2, { what: "b's spec change to be reconciled" });
        assert.equal(count("a"), 1, "a metadata-only change passed the predicate");
        // A spec change on a passes.
        await client.patch(Stack, "a", { spec: { value: "2" } }, { namespace: ns });
        await waitFor(() => count("a") === 2, { what: "a's spec change to be reconciled" });
        assert.deepEqual(seen.get("a"), [1, 2]);
        // A watched Secret maps to a through its label (no predicate on watches here).
        await client.create(Secret, {
          metadata: { name: "for-a", namespace: ns, labels: { stack: "a" } },
        });
        await waitFor(() => count("a") === 3, { what: "the watched Secret to trigger a" });
        assert.equal(count("b"), 2);
      } finally {
        await m.stop();
      }
    },
  );

  await t.step(
    "finalizer: added before reconcile works; finalize failing twice, then removal",
    async () => {
      const ns = await createNamespace(client, uniqueName("fin"));
      const fin = "ctl.kubeno.dev/cleanup";
      const reconciledWithout: string[] = [];
      const attempts: { at: number; hadFinalizer: boolean }[] = [];
      const controller = reconcile(Stack, {
        name: "stack-fin",
        finalizer: fin,
        reconcile(s) {
          if (!s.metadata.finalizers?.includes(fin)) reconciledWithout.push(s.metadata.name!);
        },
        async finalize(s, ctx) {
          const live = await ctx.client.get(Stack, s.metadata.name!, { namespace: ns });
          attempts.push({
            at: performance.now(),
            hadFinalizer: !!live.metadata.finalizers?.includes(fin),
          });
          if (attempts.length <= 2) throw new Error(`Cleanup attempt ${attempts.length} failed`);
        },
      });
      const m = run(client, ns, { controllers: [controller] });
      try {
        await client.create(Stack, stackObj("f", ns, "1"));
        await waitFor(
          async () =>
            (await client.get(Stack, "f", { namespace: ns })).metadata.finalizers?.includes(fin),
          {
            what: "the finalizer to be added",
          },
        );
        await client.delete(Stack, "f", { namespace: ns });
        await waitFor(
          () => client.get(Stack, "f", { namespace: ns }).then(() => false, (e) => isNotFound(e)),
          { what: "the Stack to be gone" },
        );
        assert.deepEqual(reconciledWithout, []);
        assert.equal(attempts.length, 3);
        assert.ok(
          attempts.every((a) => a.hadFinalizer),
          "finalize ran after the finalizer was removed",
        );
        // Failed finalizes are retried with growing delays (5 ms, then 10 ms).
        const gaps = [attempts[1].at - attempts[0].at, attempts[2].at - attempts[1].at];
        assert.ok(gaps[0] >= 4 && gaps[1] >= 9, `retry gaps ${gaps} shorter than the backoff`);
      } finally {
        await m.stop();
      }
    },
  );

  await t.step("a 409 Conflict on update is retried and converges", async () => {
    const ns = await createNamespace(client, uniqueName("conflict"));
    let conflicts = 0;
    let bumped = false;
    const controller = reconcile(Stack, {
      name: "stack-conflict",
      async reconcile(s, ctx) {
        if (s.metadata.annotations?.done) return;
        if (!bumped) {
          // Someone else writes between our read (the cache) and our update.
          bumped = true;
          await ctx.client.patch(Stack, s.metadata.name!, {
            metadata: { annotations: { bumped: "yes" } },
          }, { namespace: ns });
        }
        const updated: StackObj = {
          ...s,
          metadata: { ...s.metadata, annotations: { ...s.metadata.annotations, done: "yes" } },
        };
        try {
          await ctx.client.replace(Stack, updated);
        } catch (err) {
          if (isConflict(err)) conflicts++;
          throw err;
        }
      },
    });
    const m = run(client, ns, { controllers: [controller] });
    try {
      await client.create(Stack, stackObj("c", ns, "1"));
      const c = await waitFor(async () => {
        const obj = await client.get(Stack, "c", { namespace: ns });
        return obj.metadata.annotations?.done === "yes" && obj;
      }, { what: "the conflicting update to converge" });
      assert.equal(c.metadata.annotations?.bumped, "yes", "the other writer's change was lost");
      assert.ok(conflicts >= 1, "no conflict happened");
    } finally {
      await m.stop();
    }
  });

  await t.step(
    "a reconcile that throws 5 times is retried with per-key exponential backoff",
    async () => {
      const ns = await createNamespace(client, uniqueName("backoff"));
      const whens = new Map<string, number[]>();
      const limiters = new Map<string, RateLimiter<string>>();
      const at: number[] = [];
      const controller = reconcile(Stack, {
        name: "stack-backoff",
        reconcile() {
          at.push(performance.now());
          if (at.length <= 5) throw new Error(`Attempt ${at.length} failed`);
        },
      });
      const m = run(client, ns, {
        controllers: [controller],
        rateLimiter: (name) => {
          const l = recordingLimiter(whens);
          limiters.set(name, l);
          return l;
        },
      });
      try {
        await client.create(Stack, stackObj("b", ns, "1"));
        await waitFor(() => at.length === 6, { what: "six attempts" });
        const key = `${ns}/b`;
        assert.deepEqual(whens.get(key), [5, 10, 20, 40, 80]);
        const gaps = at.slice(1).map((x, i) => x - at[i]);
        console.log(`backoff gaps (ms): ${gaps.map((g) => g.toFixed(1)).join(", ")}`);
        // A timer never fires early, so each gap is at least its delay: the retries really
        // waited 5, 10, 20, 40 and 80 ms. (Comparing gaps with each other would assert an
        // upper bound on the early ones, which a loaded machine can break.)
        gaps.forEach((g, i) => assert.ok(g >= whens.get(key)![i] - 1, `gap ${i} is ${g} ms`));
        assert.equal(limiters.get("stack-backoff")!.numRequeues(key), 0, "success did not forget");
      } finally {
        await m.stop();
      }
    },
  );

  await t.step("a TerminalError is not retried and is recorded as a Warning Event", async () => {
    const ns = await createNamespace(client, uniqueName("terminal"));
    const whens = new Map<string, number[]>();
    const calls = new Map<string, number>();
    const controller = reconcile(Stack, {
      name: "stack-terminal",
      reconcile(s) {
        calls.set(s.metadata.name!, (calls.get(s.metadata.name!) ?? 0) + 1);
        if (s.spec.value === "bad") {
          throw new TerminalError(`Cannot use value "bad" in Stack "${s.metadata.name}"`);
        }
      },
    });
    const m = run(client, ns, {
      controllers: [controller],
      rateLimiter: () => recordingLimiter(whens),
    });
    try {
      await client.create(Stack, stackObj("t", ns, "bad"));
      const ev = await waitFor(async () => {
        const list = await client.list(Event, {
          namespace: ns,
          fieldSelector: "involvedObject.name=t",
        });
        return list.items.find((e) => e.reason === "ReconcileFailed");
      }, { what: "the Warning Event" });
      assert.equal(ev.type, "Warning");
      assert.equal(ev.message, 'Cannot use value "bad" in Stack "t"');
      // Recorded through events.k8s.io/v1: its reportingController is core/v1's reportingComponent.
      assert.equal(ev.reportingComponent, "stack-terminal");
      assert.equal(calls.get("t"), 1);
      assert.equal(whens.get(`${ns}/t`), undefined, "a terminal error was rate-limited");
      const described = await cp.kubectl("describe", "stacks.ctl.kubeno.dev", "t", "-n", ns);
      assert.match(described.stdout, /Warning\s+ReconcileFailed/);
    } finally {
      await m.stop();
    }
  });

  await t.step(
    "ControllerRuntime: after sync only; controller references of its kind; gone keys skipped; requeue; stop",
    async () => {
      const ns = await createNamespace(client, uniqueName("runtime"));
      const a = await client.create(Stack, stackObj("a", ns, "1"));
      const b = await client.create(Stack, stackObj("b", ns, "1"));
      const seen: string[] = [];
      let gate = Promise.resolve();
      let requeues = 0;
      const controller = reconcile(Stack, {
        name: "stack-runtime",
        owns: [ConfigMap],
        watches: [{
          resource: Secret,
          map: (s) =>
            s.metadata.labels?.stack ? [{ name: s.metadata.labels.stack, namespace: ns }] : [],
        }],
        async reconcile(s) {
          seen.push(s.metadata.name!);
          if (s.metadata.annotations?.requeue && requeues++ === 0) return requeue(1);
          await gate;
        },
      });
      await using informers = new InformerFactory({ client });
      const runtime = new ControllerRuntime(controller, { client, informers, namespaces: [ns] });
      assert.equal(runtime.informers.length, 3);
      informers.start();
      await waitFor(() => runtime.queue.len() === 2, { what: "the initial list to be queued" });
      assert.deepEqual(seen, [], "reconciled before start");
      await runtime.start();
      await waitFor(() => seen.length === 2, { what: "the initial reconciles" });

      const ref = (
        owner: { metadata: { name?: string; uid?: string } },
        kind: string,
        controller: boolean,
      ) => ({
        apiVersion: kind === "Stack" ? "ctl.kubeno.dev/v1" : "apps/v1",
        kind,
        name: owner.metadata.name!,
        uid: owner.metadata.uid!,
        controller,
      });
      const child = (name: string, ownerReferences: ReturnType<typeof ref>[]) =>
        client.create(ConfigMap, { metadata: { name, namespace: ns, ownerReferences } });
      // Not mapped: b's non-controller reference, and a controller of another kind named b.
      // The ConfigMap informer hands them over before c1, and one worker takes keys in order.
      await child("c2", [ref(b, "Stack", false)]);
      await child("c3", [ref(b, "Deployment", true)]);
      await child("c1", [ref(a, "Stack", true)]);
      await waitFor(() => seen.length === 3, { what: "the owned ConfigMap to trigger a" });
      assert.equal(seen[2], "a");
      await client.create(Secret, {
        metadata: { name: "for-b", namespace: ns, labels: { stack: "b" } },
      });
      await waitFor(() => seen.length === 4, { what: "the watched Secret to trigger b" });
      assert.equal(seen[3], "b");

      // b is queued while a is being reconciled, and deleted before a worker takes it.
      let release!: () => void;
      gate = new Promise((r) => release = r);
      await client.patch(Stack, "a", { spec: { value: "2" } }, { namespace: ns });
      await waitFor(() => seen.length === 5, { what: "a to be reconciled" });
      const stacks = informers.for(Stack, { namespace: ns });
      await client.delete(Stack, "b", { namespace: ns });
      await waitFor(() => !stacks.get({ name: "b", namespace: ns }) && runtime.queue.len() === 1, {
        what: "b to be gone from the cache and queued",
      });
      release();
      // A requeue: a runs again without any change.
      await client.patch(Stack, "a", { metadata: { annotations: { requeue: "once" } } }, {
        namespace: ns,
      });
      await waitFor(() => seen.length === 7, { what: "a's change and its requeue" });
      assert.deepEqual(seen.slice(4), ["a", "a", "a"], "b was reconciled after its deletion");
      assert.equal(requeues, 2);

      assert.ok(runtime.running);
      assert.ok(await runtime.stop(10_000));
      assert.ok(!runtime.running);
      const secrets = informers.for(Secret, { namespace: ns });
      await client.create(Secret, {
        metadata: { name: "for-a", namespace: ns, labels: { stack: "a" } },
      });
      await waitFor(() => secrets.get({ name: "for-a", namespace: ns }), {
        what: "the Secret informer to see the new Secret",
      });
      assert.equal(runtime.queue.len(), 0, "queued after stop");
      assert.equal(seen.length, 7);
    },
  );

  await t.step("EventRecorder aggregates repeated events into one with a count", async () => {
    const ns = await createNamespace(client, uniqueName("events"));
    const cm = await client.create(ConfigMap, { metadata: { name: "target", namespace: ns } });
    const events = new EventRecorder(client, { component: "tester", host: "here" });
    events.warning(cm, "Flapping", "It flapped");
    events.warning(cm, "Flapping", "It flapped");
    events.normal(cm, "Settled", "It settled");
    await events.warning(cm, "Flapping", "It flapped");
    await events.flush();
    const list = await client.list(Event, { namespace: ns });
    const flapping = list.items.filter((e) => e.reason === "Flapping");
    assert.equal(flapping.length, 1);
    // events.k8s.io/v1 counts repeats in a series (core/v1 readers see it as `series`).
    assert.equal(flapping[0].series?.count, 3);
    assert.equal(flapping[0].involvedObject.uid, cm.metadata.uid);
    assert.equal(list.items.filter((e) => e.reason === "Settled").length, 1);
    const described = await cp.kubectl("describe", "configmap", "target", "-n", ns);
    assert.match(described.stdout, /Warning\s+Flapping\s+.*x3 over/);
    // Failures are logged, never thrown: an object in a namespace that does not exist.
    await events.normal({ ...cm, metadata: { ...cm.metadata, namespace: "nope" } }, "X", "y");
  });
});
