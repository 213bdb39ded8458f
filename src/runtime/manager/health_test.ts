import assert from "node:assert/strict";
import { parseBindAddress } from "../../util/http_server.ts";
import { FakeClock } from "../../testing/fake_clock.ts";
import { HealthChecks, informersSynced, serveProbes, watchesNotStalled } from "./health.ts";
import type { InformerHealth } from "../cache/informer.ts";

async function get(url: string): Promise<[number, string]> {
  const res = await fetch(url);
  return [res.status, await res.text()];
}

Deno.test("parseBindAddress() reads kubebuilder's forms", () => {
  assert.deepEqual(parseBindAddress(":8080"), { hostname: "0.0.0.0", port: 8080 });
  assert.deepEqual(parseBindAddress("127.0.0.1:8081"), { hostname: "127.0.0.1", port: 8081 });
  assert.deepEqual(parseBindAddress("[::1]:9000"), { hostname: "::1", port: 9000 });
  assert.deepEqual(parseBindAddress("localhost:0"), { hostname: "localhost", port: 0 });
  assert.equal(parseBindAddress("0"), undefined);
  for (const bad of ["", "8080", ":", ":99999", "host:port", "::1:80"]) {
    assert.throws(() => parseBindAddress(bad), /Cannot parse bind address/, bad);
  }
});

Deno.test("serveProbes() answers like controller-runtime's healthz over loopback HTTP", async () => {
  let live = true;
  const checks = new HealthChecks()
    .addHealthz("ping", () => {})
    .addHealthz("loop", async () => {
      await Promise.resolve();
      if (!live) throw new Error("Event loop wedged");
    })
    .addReadyz("webhooks", () => {});
  await using server = await serveProbes(checks, { address: "127.0.0.1:0" });
  const base = server!.url;
  assert.deepEqual(await get(`${base}healthz`), [200, "ok"]);
  assert.deepEqual(await get(`${base}healthz?verbose`), [
    200,
    "[+]ping ok\n[+]loop ok\nhealthz check passed\n",
  ]);
  assert.deepEqual(await get(`${base}readyz`), [200, "ok"]);
  live = false;
  assert.deepEqual(await get(`${base}healthz`), [
    500,
    "[+]ping ok\n[-]loop failed: reason withheld\nhealthz check failed\n",
  ]);
  assert.deepEqual(await get(`${base}healthz/loop`), [
    500,
    "internal server error: Event loop wedged\n",
  ]);
  assert.deepEqual(await get(`${base}healthz?exclude=loop`), [200, "ok"]);
  assert.deepEqual(await get(`${base}readyz`), [200, "ok"]);
  assert.deepEqual(await get(`${base}healthz/ping`), [200, "ok"]);
  assert.equal((await get(`${base}healthz/nope`))[0], 404);
  assert.equal((await get(`${base}metrics`))[0], 404);
  assert.equal(await serveProbes(checks, { address: "0" }), undefined);
  assert.throws(
    () => serveProbes(checks, { address: `127.0.0.1:${server!.port}` }),
    Deno.errors.AddrInUse,
  );
});

Deno.test("HealthChecks without checks answers with ping; names are checked", async () => {
  const checks = new HealthChecks();
  const res = await checks.handle(new Request("http://x/readyz?verbose"));
  assert.equal(await res.text(), "[+]ping ok\nhealthz check passed\n");
  checks.addReadyz("a", () => {});
  assert.throws(() => checks.addReadyz("a", () => {}), /a check of that name exists/);
  assert.throws(() => checks.addHealthz("a/b", () => {}), /invalid name "a\/b"/);
  assert.throws(() => checks.addHealthz("", () => {}), TypeError);
});

Deno.test("HealthChecks.run() fails a check that does not answer in time", async () => {
  const checks = new HealthChecks().addHealthz("hang", () => new Promise(() => {}));
  const results = await checks.run("healthz", { signal: AbortSignal.timeout(20) });
  assert.deepEqual(results, [{ name: "hang", ok: false, error: "Check timed out" }]);
});

Deno.test("informersSynced() and watchesNotStalled() judge informers", () => {
  const clock = new FakeClock(10_000);
  const h: InformerHealth = {
    healthy: true,
    synced: true,
    state: "watching",
    lastEventAt: 10_000,
    error: undefined,
  };
  const a = { resource: { kind: "Pod" }, hasSynced: true, health: () => h };
  const b = {
    resource: { kind: "Secret" },
    hasSynced: false,
    health: () => ({ ...h, synced: false, lastEventAt: undefined }),
  };
  const signal = new AbortController().signal;
  assert.throws(
    () => informersSynced(() => [a, b])(signal),
    /^HealthCheckError: Informers not synced: "Secret"$/,
  );
  informersSynced(() => [a])(signal);
  const stalled = watchesNotStalled(() => [a, b], { maxSilenceMs: 5_000, clock });
  stalled(signal);
  clock.tick(5_001);
  assert.throws(() => stalled(signal), /Watch stalled: "Pod" silent for 5001 ms/);
  h.state = "stopped"; // a stopped informer is not a stalled one
  stalled(signal);
});
