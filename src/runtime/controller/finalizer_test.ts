import assert from "node:assert/strict";
import { ApiError } from "../../client/errors/api_error.ts";
import type { Client } from "../../client/client.ts";
import {
  addFinalizerPatch,
  finalizer,
  finalizerAction,
  removeFinalizerPatch,
} from "./finalizer.ts";
import type { KubeObject } from "../../core/object.ts";
import { requeue } from "./reconcile.ts";
import { resource } from "../../core/resource.ts";

const F = "a.io/x";
const Res = resource({ group: "a.io", version: "v1", kind: "Thing" });
const DT = "2025-01-01T00:00:00Z";

function fakeClient(fail?: unknown) {
  const patches: unknown[] = [];
  const client = {
    patch(_r: unknown, name: string, patch: any) {
      patches.push(patch);
      if (fail) return Promise.reject(fail);
      return Promise.resolve({ metadata: { name, ...patch.metadata, resourceVersion: "9" } });
    },
  } as unknown as Client;
  return { client, patches };
}

Deno.test("finalizerAction covers the four states", () => {
  assert.equal(finalizerAction({ metadata: {} }, F), "add");
  assert.equal(finalizerAction({ metadata: { finalizers: [F] } }, F), "apply");
  assert.equal(
    finalizerAction({ metadata: { finalizers: [F], deletionTimestamp: DT } }, F),
    "cleanup",
  );
  assert.equal(
    finalizerAction({ metadata: { finalizers: ["o/y"], deletionTimestamp: DT } }, F),
    "none",
  );
});

Deno.test("finalizer patches keep other finalizers and carry the resourceVersion", () => {
  const obj = { metadata: { resourceVersion: "3", finalizers: ["o/y", F] } };
  assert.deepEqual(addFinalizerPatch(obj, F), {
    metadata: { finalizers: ["o/y", F], resourceVersion: "3" },
  });
  assert.deepEqual(removeFinalizerPatch(obj, F), {
    metadata: { finalizers: ["o/y"], resourceVersion: "3" },
  });
});

Deno.test("finalizer() adds before apply and removes after cleanup", async () => {
  const { client, patches } = fakeClient();
  const events: string[] = [];
  const handler = (ev: { type: string; object: KubeObject }) => {
    events.push(`${ev.type}:${ev.object.metadata.finalizers?.join()}`);
    return "ok";
  };
  const fresh: KubeObject = { metadata: { name: "t", resourceVersion: "1" } };
  assert.equal(await finalizer(client, Res, F, fresh, handler), "ok");
  assert.deepEqual(events, [`apply:${F}`]);
  assert.equal(patches.length, 1);

  const deleting = {
    metadata: { name: "t", resourceVersion: "2", finalizers: [F], deletionTimestamp: DT },
  };
  assert.equal(await finalizer(client, Res, F, deleting, handler), "ok");
  assert.deepEqual(patches[1], { metadata: { finalizers: null, resourceVersion: "2" } });

  // A requeue result keeps the finalizer; a failing cleanup keeps it too.
  await finalizer(client, Res, F, deleting, () => requeue(10));
  assert.equal(patches.length, 2);
  await assert.rejects(
    finalizer(client, Res, F, deleting, () => {
      throw new Error("Cleanup failed");
    }),
    /Cleanup failed/,
  );
  assert.equal(patches.length, 2);
  // Nothing to do once our finalizer is gone.
  assert.equal(
    await finalizer(client, Res, F, { metadata: { name: "t", deletionTimestamp: DT } }, handler),
    undefined,
  );
});

Deno.test("finalizer() tolerates a vanished object and reports conflicts", async () => {
  const deleting = {
    metadata: { name: "t", resourceVersion: "2", finalizers: [F], deletionTimestamp: DT },
  };
  const target = { verb: "patch", kind: "Thing", apiVersion: "a.io/v1", plural: "things" };
  const gone = ApiError.fromStatus(target, 404, {
    code: 404,
    reason: "NotFound",
    message: "gone",
    details: { name: "t", kind: "things" },
  });
  assert.equal(await finalizer(fakeClient(gone).client, Res, F, deleting, () => 1), 1);
  const conflict = ApiError.fromStatus(target, 409, {
    code: 409,
    reason: "Conflict",
    message: "changed",
  });
  await assert.rejects(finalizer(fakeClient(conflict).client, Res, F, deleting, () => 1), ApiError);
});
