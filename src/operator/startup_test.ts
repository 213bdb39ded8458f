import assert from "node:assert/strict";
import { z } from "../util/zod.ts";
import { ApiError, ConnectionError } from "../client/errors/api_error.ts";
import type { Client } from "../client/client.ts";
import type { Informer } from "../runtime/cache/informer.ts";
import { reconcile } from "../runtime/controller/reconcile.ts";
import { defineResource } from "../schema/define_resource.ts";
import { FakeClock } from "../testing/fake_clock.ts";
import { defineOperator } from "./_dispatch.ts";
import { ApiServerUnavailableError, ApiServerWait } from "./command/api_server_wait.ts";
import { awaitApiServer, cacheSyncDeadline, StartupError } from "./run/startup.ts";

const Gadget = defineResource({
  group: "gadgets.example.com",
  version: "v1",
  kind: "Gadget",
  spec: z.object({ size: z.int() }),
});
const def = defineOperator({
  name: "gadget-operator",
  controllers: [reconcile(Gadget, { reconcile() {} })],
});
const target = {
  verb: "list",
  kind: "Gadget",
  apiVersion: "gadgets.example.com/v1",
  plural: "gadgets",
};
const forbidden = ApiError.fromStatus(target, 403, {
  kind: "Status",
  status: "Failure",
  code: 403,
  reason: "Forbidden",
  message: 'gadgets.gadgets.example.com is forbidden: User "x" cannot list resource "gadgets"',
  details: { group: "gadgets.example.com", kind: "gadgets" },
});
const notServed = ApiError.fromStatus(target, 404, "404 page not found");
const notReady = ApiError.fromStatus(
  { verb: "get", kind: "/readyz", apiVersion: "", plural: "/readyz" },
  500,
  "[-]poststarthook/rbac/bootstrap-roles failed: not finished",
);
// What the client makes of /readyz's plain-text "ok".
const readyzOk = new ConnectionError(
  "https://127.0.0.1:6443",
  "get",
  new Error("invalid JSON in the response: Unexpected token 'o'"),
);

/** A stand-in client: `list` and `/readyz` answer from scripts, then succeed. */
function client(lists: unknown[], readyz: unknown[]) {
  const calls = { list: 0, readyz: 0 };
  const c = {
    list: () => {
      const f = lists[calls.list++];
      return f ? Promise.reject(f) : Promise.resolve({ metadata: {}, items: [] });
    },
    request: () => Promise.reject(readyz[calls.readyz++] ?? readyzOk),
  } as unknown as Pick<Client, "list" | "request">;
  return { client: c, calls };
}

const wait = (clock: FakeClock) =>
  new ApiServerWait({ timeoutMs: 60_000, flag: "--startup-timeout", clock });

Deno.test("awaitApiServer: a 403 while the API server is not ready is waited out", async () => {
  const clock = new FakeClock();
  const { client: c, calls } = client([forbidden, forbidden], [notReady, notReady]);
  const done = awaitApiServer(c, def, [], wait(clock));
  await clock.tickAsync(10_000);
  await done;
  assert.deepEqual(calls, { list: 3, readyz: 2 });
});

Deno.test("awaitApiServer: a 403 from a ready API server ends start-up at once", async () => {
  const clock = new FakeClock();
  const { client: c, calls } = client([forbidden], []);
  await assert.rejects(awaitApiServer(c, def, [], wait(clock)), (err) => err === forbidden);
  assert.deepEqual(calls, { list: 1, readyz: 1 });
});

Deno.test("awaitApiServer: a kind that is not served names the install command", async () => {
  const clock = new FakeClock();
  const { client: c } = client([notServed], []);
  await assert.rejects(awaitApiServer(c, def, [], wait(clock)), (err) => {
    assert.ok(err instanceof StartupError);
    assert.equal(
      err.message,
      'The Kubernetes API server does not serve Gadget (gadgets.example.com/v1): its CustomResourceDefinition "gadgets.gadgets.example.com" is not installed; run "gadget-operator install" first',
    );
    assert.equal(err.cause, notServed);
    return true;
  });
});

Deno.test("awaitApiServer: unreachable until the deadline ends in ApiServerUnavailableError", async () => {
  const clock = new FakeClock();
  const refused = new ConnectionError("https://127.0.0.1:6443", "list", new TypeError("refused"));
  const { client: c } = client(Array.from({ length: 1_000 }, () => refused), []);
  const done = assert.rejects(
    awaitApiServer(c, def, [], wait(clock)),
    (err) => err instanceof ApiServerUnavailableError && err.cause === refused,
  );
  await clock.tickAsync(61_000);
  await done;
});

Deno.test("cacheSyncDeadline names the informers that did not sync and why", () => {
  const clock = new FakeClock();
  const failing = {
    hasSynced: false,
    error: new Error("Cannot list configmaps: Forbidden: no"),
    resource: { kind: "ConfigMap", apiVersion: "v1" },
  };
  const silent = {
    hasSynced: false,
    error: undefined,
    resource: { kind: "Secret", apiVersion: "v1" },
  };
  const synced = {
    hasSynced: true,
    error: undefined,
    resource: { kind: "Gadget", apiVersion: "x/v1" },
  };
  const informers = [failing, silent, synced] as unknown as Informer<any>[];
  const seen: { expired?: StartupError } = {};
  using _ = cacheSyncDeadline({
    remainingMs: 5_000,
    setting: "--startup-timeout=5s",
    synced: () => false,
    informers: () => informers,
    onExpired: (err) => seen.expired = err,
    clock,
  });
  clock.tick(4_999);
  const expired = (): StartupError | undefined => seen.expired;
  assert.equal(expired(), undefined);
  clock.tick(1);
  assert.equal(
    expired()?.message,
    "Caches did not sync within the start-up timeout (--startup-timeout=5s): Cannot list configmaps: Forbidden: no; Secret (v1): no list completed",
  );
  assert.equal(expired()?.cause, failing.error);

  let late = false;
  using _synced = cacheSyncDeadline({
    remainingMs: 1_000,
    setting: "--startup-timeout=1s",
    synced: () => true,
    informers: () => informers,
    onExpired: () => late = true,
    clock,
  });
  clock.tick(2_000);
  assert.equal(late, false, "synced in time: nothing happens");
});
