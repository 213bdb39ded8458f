// The reconcile contract's consistency guarantees, each on a real API server whose watch
// streams reach the controller 1.5 s late (through the lag proxy), so that the cache lags the
// controller's own writes every time instead of now and then:
//
// 1. read-your-own-writes: no reconcile sees a primary older than the controller's last
//    write of it, and the echo of an own write starts no reconcile;
// 2. expectations: a child created with generateName is counted at once (in the same
//    reconcile and in the next ones) and a deleted one is not deleted again;
// 3. the newest state: status writes followed by the finalizer's removal never conflict
//    with each other, and a 409 from another writer is retried once the cache shows it;
// 4. backoff that holds: a failing reconcile's own writes do not cut its backoff short, and
//    the controller stops at once.
//
// One control plane and one proxy for the file; each step its own namespace and controller.
import assert from "node:assert/strict";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { startLagProxy } from "../src/testing/lag_proxy.ts";
import { createClient, type RequestMetric } from "../src/client/client.ts";
import { ConfigMap } from "../src/core/kinds.ts";
import { type Controller, reconcile, requeue } from "../src/runtime/controller/reconcile.ts";
import type { Cause } from "../src/runtime/controller/metrics_hooks.ts";
import { controllerOf } from "../src/core/owner.ts";
import { objectKey } from "../src/core/object_key.ts";
import { compareResourceVersions } from "../src/core/object.ts";
import type { ObjectOf } from "../src/core/resource.ts";
import { waitFor } from "./_helpers.ts";
import { createNamespace, installStack, runObserved, Stack } from "./_stack.ts";

const LAG_MS = 1_500;
const N = 5;

Deno.test("consistency: a reconcile never acts on a cache older than its own writes", async (t) => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  await installStack(admin);
  await using proxy = await startLagProxy({ kubeconfig: cp.kubeconfigPath });
  proxy.delay({ group: "ctl.kubeno.dev", resource: "stacks" }, LAG_MS);
  proxy.delay({ group: "", resource: "configmaps" }, LAG_MS);

  const requests: RequestMetric[] = [];
  using client = await createClient({
    kubeconfig: proxy.kubeconfigPath,
    onRequest: (m) => void requests.push(m),
  });
  const conflicts = () => requests.filter((r) => r.code === 409).length;

  /** Runs `controller` in namespace `ns` until the returned value is disposed. */
  const run = async (controller: Controller<any>, ns: string) => {
    const observed = await runObserved(controller, client, ns);
    const stacks = observed.informers.for(Stack, { namespace: ns });
    return {
      runtime: observed.runtime,
      /** Queue adds by cause. */
      get causes(): Partial<Record<Cause, number>> {
        const by: Partial<Record<Cause, number>> = {};
        for (const { cause } of observed.causes) by[cause] = (by[cause] ?? 0) + 1;
        return by;
      },
      echoes: observed.echoes,
      /** Waits until the cache shows every Stack as the server holds it and no work is left. */
      async idle() {
        await waitFor(async () => {
          const list = await admin.list(Stack, { namespace: ns });
          return list.items.every((s) =>
            stacks.store.get(objectKey(s))?.metadata.resourceVersion ===
              s.metadata.resourceVersion
          ) && observed.idle();
        }, { what: `the controller in ${ns} to be idle with its cache caught up` });
      },
      [Symbol.asyncDispose]: () => observed[Symbol.asyncDispose](),
    };
  };

  await t.step(
    "1. read-your-own-writes: no stale primary, and echoes start no reconcile",
    async () => {
      const ns = await createNamespace(admin, "ryow");
      const written = new Map<string, string>();
      let stale = 0;
      let reconciles = 0;
      const controller = reconcile(Stack, {
        name: "ryow",
        owns: [ConfigMap],
        async reconcile(stack, ctx) {
          reconciles++;
          const mine = written.get(ctx.key);
          if (mine && compareResourceVersions(stack.metadata.resourceVersion!, mine) < 0) stale++;
          const cm = await ctx.apply(ConfigMap, {
            metadata: { name: stack.metadata.name! },
            data: { value: stack.spec.value },
          });
          // The cache shows the context's own write at once.
          const seen = ctx.cache.get(ConfigMap, cm.metadata.name!);
          assert.equal(seen?.metadata.resourceVersion, cm.metadata.resourceVersion);
          await ctx.patchStatus(stack, { observed: stack.spec.value });
          // Written now rather than as the reconcile returns, to learn its resourceVersion.
          const out = await ctx.flushStatus();
          written.set(ctx.key, out.metadata.resourceVersion!);
        },
      });
      await using c = await run(controller, ns);
      for (let i = 0; i < N; i++) {
        await admin.create(Stack, {
          metadata: { name: `s-${i}`, namespace: ns },
          spec: { value: "a" },
        });
      }
      // Each new Stack is one reconcile: the echoes of its ConfigMap's creation (a server-side
      // apply) and of its status write start none.
      await waitFor(
        async () =>
          (await admin.list(Stack, { namespace: ns })).items.every((s) =>
            s.status?.observed === "a"
          ),
        { what: "every Stack to observe a" },
      );
      await waitFor(
        async () =>
          (await admin.list(ConfigMap, { namespace: ns })).items.every((cm) =>
            c.runtime.cache.get(ConfigMap, cm.metadata.name!, { namespace: ns })?.metadata
              .resourceVersion === cm.metadata.resourceVersion
          ),
        { what: "the ConfigMaps to be cached" },
      );
      await c.idle();
      assert.equal(reconciles, N, "one reconcile per new Stack");
      // Two changes in a row: the second one's event comes right behind the first, while the
      // cache has not shown the status the first reconcile wrote.
      await c.idle();
      for (const value of ["b", "c"]) {
        for (let i = 0; i < N; i++) {
          await admin.patch(Stack, `s-${i}`, { spec: { value } }, { namespace: ns });
        }
      }
      await waitFor(
        async () =>
          (await admin.list(Stack, { namespace: ns })).items.every((s) =>
            s.status?.observed === "c"
          ),
        {
          what: "every Stack to observe the last change",
        },
      );
      await c.idle();
      assert.equal(stale, 0, "reconciles that saw a primary older than their own last write");
      // Quiet now: one change each is one reconcile each; the echoes of its two writes none.
      const before = reconciles;
      const echoesBefore = c.echoes();
      for (let i = 0; i < N; i++) {
        await admin.patch(Stack, `s-${i}`, { spec: { value: "d" } }, { namespace: ns });
      }
      await waitFor(
        async () =>
          (await admin.list(Stack, { namespace: ns })).items.every((s) =>
            s.status?.observed === "d"
          ),
        {
          what: "every Stack to observe d",
        },
      );
      await c.idle();
      console.log(
        `ryow: ${reconciles} reconciles for ${N} objects x 4 states, ${stale} stale, ${c.echoes()} echoes skipped, queue adds ${
          JSON.stringify(c.causes)
        }`,
      );
      assert.equal(reconciles - before, N, "one reconcile per change");
      assert.ok(c.echoes() - echoesBefore >= 2 * N, "each write's echo was seen and skipped");
      assert.equal(conflicts(), 0);
    },
  );

  await t.step(
    "2. expectations: one child per primary, no second delete of a deleted one",
    async () => {
      const ns = await createNamespace(admin, "expect");
      const rounds = new Map<string, number>();
      let unseenInSameReconcile = 0;
      const owner = (cm: ConfigMap) => {
        const ref = controllerOf(cm);
        return ref?.kind === "Stack"
          ? [objectKey({ namespace: cm.metadata.namespace, name: ref.name })]
          : [];
      };
      const controller = reconcile(Stack, {
        name: "expect",
        owns: [{ resource: ConfigMap, indexes: { byOwner: owner } }],
        async reconcile(stack, ctx) {
          const kids = ctx.cache.list(ConfigMap, { index: { byOwner: ctx.key } });
          for (const kid of kids) {
            if (kid.data?.value !== stack.spec.value) await ctx.delete(ConfigMap, kid);
          }
          if (!kids.some((k) => k.data?.value === stack.spec.value)) {
            await ctx.create(ConfigMap, {
              metadata: { generateName: `${stack.metadata.name}-` },
              data: { value: stack.spec.value },
            });
            const now = ctx.cache.list(ConfigMap, { index: { byOwner: ctx.key } });
            if (!now.some((k) => k.data?.value === stack.spec.value)) unseenInSameReconcile++;
          }
          await ctx.patchStatus(stack, { observed: stack.spec.value });
          // Reconcile again and again while the cache lags: every round a chance to duplicate.
          const n = (rounds.get(ctx.key) ?? 0) + 1;
          rounds.set(ctx.key, n);
          return n % 40 === 0 ? undefined : requeue(50);
        },
      });
      await using c = await run(controller, ns);
      const children = async () =>
        (await admin.list(ConfigMap, { namespace: ns })).items.filter((cm) => controllerOf(cm));
      for (let i = 0; i < N; i++) {
        await admin.create(Stack, {
          metadata: { name: `e-${i}`, namespace: ns },
          spec: { value: "one" },
        });
      }
      await waitFor(async () => (await children()).length >= N, { what: `${N} children` });
      await c.idle();
      assert.equal((await children()).length, N, "one child per Stack, none created twice");
      // Each child replaced: the old one deleted once, the new one created once.
      const deletesBefore = requests.filter((r) => r.verb === "delete").length;
      for (let i = 0; i < N; i++) {
        await admin.patch(Stack, `e-${i}`, { spec: { value: "two" } }, { namespace: ns });
      }
      await waitFor(async () => {
        const kids = await children();
        return kids.length === N && kids.every((k) => k.data?.value === "two");
      }, { what: "every child replaced by one for value two" });
      await c.idle();
      const deletes = requests.filter((r) => r.verb === "delete").slice(0);
      const missing = deletes.filter((r) => r.code === 404).length;
      console.log(
        `expectations: ${(await children()).length} children, ${
          deletes.length - deletesBefore
        } deletes (${missing} of gone objects), ${unseenInSameReconcile} creates unseen by the same reconcile`,
      );
      assert.equal((await children()).length, N);
      assert.equal(deletes.length - deletesBefore, N, "each old child deleted once");
      assert.equal(missing, 0, "no delete of an object already deleted");
      assert.equal(unseenInSameReconcile, 0, "ctx.cache shows a create at once");
    },
  );

  await t.step(
    "3. the newest state: status writes before the finalizer's removal never conflict",
    async () => {
      const ns = await createNamespace(admin, "newest");
      const before = conflicts();
      const attempts = new Map<string, number>();
      const controller = reconcile(Stack, {
        name: "newest",
        finalizer: "ctl.kubeno.dev/cleanup",
        async reconcile(stack, ctx) {
          attempts.set(ctx.key, (attempts.get(ctx.key) ?? 0) + 1);
          if (!stack.status?.conditions?.length) {
            await ctx.setCondition(stack, {
              type: "Available",
              status: "Unknown",
              reason: "Reconciling",
              message: "Starting reconciliation",
            });
          }
          if (stack.metadata.name === "contended" && attempts.get(ctx.key) === 1) {
            // Another writer sets a condition after this reconcile read the object.
            await admin.patchStatus(Stack, "contended", {
              metadata: { resourceVersion: undefined },
              status: {
                conditions: [{
                  type: "Other",
                  status: "True",
                  reason: "ByHand",
                  message: "set by another writer",
                  lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
                }],
              },
            }, { namespace: ns });
          }
          await ctx.setCondition(stack, {
            type: "Available",
            status: "True",
            reason: "Reconciling",
            message: "done",
          });
        },
        async finalize(stack, ctx) {
          await ctx.setCondition(stack, {
            type: "Degraded",
            status: "Unknown",
            reason: "Finalizing",
            message: "Performing finalizer operations",
          });
          ctx.events.warning(stack, "Deleting", `Stack ${stack.metadata.name} is being deleted`);
          await ctx.setCondition(stack, {
            type: "Degraded",
            status: "True",
            reason: "Finalizing",
            message: "Finalizer operations were successfully accomplished",
          });
        },
      });
      await using _c = await run(controller, ns);
      for (let i = 0; i < N; i++) {
        await admin.create(Stack, {
          metadata: { name: `n-${i}`, namespace: ns },
          spec: { value: "" },
        });
      }
      const available = (s: ObjectOf<typeof Stack>) =>
        s.status?.conditions?.some((c) => c.type === "Available" && c.status === "True");
      await waitFor(async () => {
        const items = (await admin.list(Stack, { namespace: ns })).items;
        return items.length === N && items.every(available);
      }, { what: "every Stack Available" });
      assert.equal(conflicts() - before, 0, "conflicts between the controller's own writes");
      for (let i = 0; i < N; i++) await admin.delete(Stack, `n-${i}`, { namespace: ns });
      await waitFor(async () => (await admin.list(Stack, { namespace: ns })).items.length === 0, {
        what: "every deletion to complete",
      });
      assert.equal(conflicts() - before, 0, "conflicts during finalization");

      // A 409 from another writer: retried once, after the cache showed that writer's change.
      await admin.create(Stack, {
        metadata: { name: "contended", namespace: ns },
        spec: { value: "" },
      });
      await waitFor(async () => {
        const s = await admin.get(Stack, "contended", { namespace: ns });
        return available(s) && s;
      }, { what: "the contended Stack Available" });
      const s = await admin.get(Stack, "contended", { namespace: ns });
      const types = (s.status?.conditions ?? []).map((c) => c.type).sort();
      console.log(
        `newest: ${conflicts() - before} conflicts, contended took ${
          attempts.get(`${ns}/contended`)
        } attempts, conditions ${types.join(",")}`,
      );
      assert.deepEqual(types, ["Available", "Other"], "the other writer's condition is kept");
      assert.equal(conflicts() - before, 1, "one conflict: the other writer's");
      assert.equal(
        attempts.get(`${ns}/contended`),
        2,
        "retried once, on the state the server holds",
      );
    },
  );

  await t.step(
    "4. backoff holds although each failed attempt writes; the controller stops at once",
    async () => {
      const ns = await createNamespace(admin, "backoff");
      let attempts = 0;
      const controller = reconcile(Stack, {
        name: "backoff",
        async reconcile(stack, ctx) {
          attempts++;
          await ctx.patchStatus(stack, { observed: `attempt ${attempts}` });
          throw new Error(`Cannot reconcile ${ctx.key}: attempt ${attempts} fails on purpose`);
        },
      });
      const c = await run(controller, ns);
      await admin.create(Stack, {
        metadata: { name: "failing", namespace: ns },
        spec: { value: "" },
      });
      await waitFor(() => attempts >= 6, { timeoutMs: 120_000, what: "six failed attempts" });
      const events = (c.causes.primary ?? 0) + (c.causes.owns ?? 0) + (c.causes.watches ?? 0);
      console.log(
        `backoff: ${attempts} attempts, queue adds ${
          JSON.stringify(c.causes)
        }, ${c.echoes()} echoes skipped`,
      );
      assert.equal(events, 1, "only the creation was an event: the attempts' own writes were not");
      assert.ok((c.causes.error ?? 0) >= attempts - 1, "every retry came from the backoff");
      assert.ok(await c.runtime.stop(10_000), "stopped with nothing left in flight");
      await c[Symbol.asyncDispose]();
    },
  );
});
