// One status write per reconcile, seen from outside: a watcher of the primary records every
// status the server holds while a reconcile sets a status field and then a condition saying
// the same (as examples/webapp.ts does), and never sees one without the other or the two
// disagreeing. And `status.observedGeneration`, set by the framework when the status schema has
// it, and not with `observedGeneration: false`. One control plane for the file.
import assert from "node:assert/strict";
import { z } from "zod";
import { startControlPlane } from "../src/testing/control_plane.ts";
import { createClient, type RequestMetric } from "../src/client/client.ts";
import type { Condition } from "../src/core/object.ts";
import { reconcile } from "../src/runtime/controller/reconcile.ts";
import { conditionsSchema } from "../src/schema/condition.ts";
import { defineResource } from "../src/schema/define_resource.ts";
import { waitFor } from "./_helpers.ts";
import { createNamespace, installResource, runObserved } from "./_stack.ts";

const Page = defineResource({
  group: "status.kubeno.dev",
  version: "v1",
  kind: "Page",
  spec: z.object({ good: z.boolean().default(false) }),
  status: z.object({
    areWeGood: z.boolean().optional(),
    observedGeneration: z.int().optional(),
    conditions: conditionsSchema,
  }),
});

type PageStatus = { areWeGood?: boolean; observedGeneration?: number; conditions?: Condition[] };

const controllerOf = (name: string, observedGeneration?: boolean) =>
  reconcile(Page, {
    name,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
    async reconcile(page, ctx) {
      const good = page.spec.good;
      const patched = await ctx.patchStatus(page, { areWeGood: good });
      await ctx.setCondition(patched, {
        type: "Ready",
        status: good ? "True" : "False",
        reason: good ? "AllGood" : "NotYet",
      });
    },
  });

/** Whether a status is all of one reconcile: empty, or `areWeGood` and `Ready` agreeing. */
function whole(status: PageStatus | undefined): boolean {
  if (!status || Object.keys(status).length === 0) return true;
  const ready = status.conditions?.find((c) => c.type === "Ready")?.status;
  return status.areWeGood !== undefined && ready === (status.areWeGood ? "True" : "False");
}

Deno.test("one status write per reconcile: a watcher never sees a mixed status; observedGeneration", async (t) => {
  await using cp = await startControlPlane();
  using admin = await createClient({ kubeconfig: cp.kubeconfigPath, fieldManager: "tester" });
  await installResource(admin, Page);

  await t.step("a watcher of the primary never sees a field without its condition", async () => {
    const ns = await createNamespace(admin, "mixed");
    const statusWrites: RequestMetric[] = [];
    using client = await createClient({
      kubeconfig: cp.kubeconfigPath,
      // The controller sends nothing but status patches.
      onRequest: (m) => void (m.method === "PATCH" && statusWrites.push(m)),
    });
    const seen: PageStatus[] = [];
    const watching = new AbortController();
    const watcher = (async () => {
      try {
        for await (
          const ev of admin.watchEvents(Page, { namespace: ns, signal: watching.signal })
        ) {
          if (ev.type === "ADDED" || ev.type === "MODIFIED") {
            seen.push(structuredClone((ev.object.status ?? {}) as PageStatus));
          }
        }
      } catch (err) {
        if (!watching.signal.aborted) throw err;
      }
    })();
    await using _watch = {
      async [Symbol.asyncDispose]() {
        watching.abort();
        await watcher;
      },
    };
    await using c = await runObserved(controllerOf("mixed"), client, ns);
    await admin.create(Page, { metadata: { name: "p", namespace: ns }, spec: { good: false } });
    const flips = [true, false, true, false, true];
    const settledAt = async (good: boolean) =>
      await waitFor(async () => {
        const p = await admin.get(Page, "p", { namespace: ns });
        return whole(p.status) && p.status?.areWeGood === good &&
          p.status?.observedGeneration === p.metadata.generation;
      }, { what: `the Page's status to say areWeGood ${good}` });
    await settledAt(false);
    for (const good of flips) {
      await admin.patch(Page, "p", { spec: { good } }, { namespace: ns });
      await settledAt(good);
    }
    await waitFor(() => c.idle(), { what: "the controller to be idle" });
    // The watch has delivered the last status once it shows what the server holds.
    const last = (await admin.get(Page, "p", { namespace: ns })).status as PageStatus;
    await waitFor(
      () => seen.length > 0 && whole(seen.at(-1)) && seen.at(-1)?.areWeGood === last.areWeGood,
      {
        what: "the watcher to see the last status",
      },
    );
    const statuses = seen.filter((s) => Object.keys(s).length > 0);
    console.log(
      `statuses seen by the watcher: ${statuses.length}, status writes: ${statusWrites.length}, ` +
        `reconciled states: ${flips.length + 1}`,
    );
    const mixed = statuses.filter((s) => !whole(s));
    assert.deepEqual(mixed, [], "the watcher saw a status half written");
    assert.equal(statusWrites.length, flips.length + 1, "one status write per change");
  });

  await t.step(
    "observedGeneration: set from the object the reconcile read; not with the opt-out",
    async () => {
      for (const [name, optOut] of [["observed", false], ["optout", true]] as const) {
        const ns = await createNamespace(admin, name);
        await using _c = await runObserved(
          controllerOf(name, optOut ? false : undefined),
          admin,
          ns,
        );
        await admin.create(Page, { metadata: { name: "p", namespace: ns }, spec: { good: true } });
        await admin.patch(Page, "p", { spec: { good: false } }, { namespace: ns });
        const p = await waitFor(async () => {
          const p = await admin.get(Page, "p", { namespace: ns });
          return p.status?.areWeGood === false && p.metadata.generation === 2 ? p : undefined;
        }, { what: `the ${name} Page to be reconciled at generation 2` });
        const status = p.status as PageStatus;
        if (optOut) {
          assert.equal(status.observedGeneration, undefined, "written although opted out");
        } else {
          assert.equal(status.observedGeneration, 2);
          assert.equal(status.conditions?.[0].observedGeneration, 2);
        }
      }
    },
  );
});
