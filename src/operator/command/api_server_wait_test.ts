import assert from "node:assert/strict";
import { ApiError, ConnectionError } from "../../client/errors/api_error.ts";
import { FakeClock } from "../../testing/fake_clock.ts";
import {
  ApiServerUnavailableError,
  ApiServerWait,
  isUnavailable,
  seconds,
} from "./api_server_wait.ts";

const target = { verb: "list", kind: "Widget", apiVersion: "example.com/v1", plural: "widgets" };
const refused = () =>
  new ConnectionError("https://127.0.0.1:1", "list", new TypeError("Connection refused"));
const status = (code: number, message = "x") =>
  ApiError.fromStatus(target, code, {
    kind: "Status",
    status: "Failure",
    code,
    message,
    details: { name: "w", kind: "widgets" },
  });

/** An attempt that fails with `failures` in turn, then returns "ok"; counts its calls. */
function scripted(failures: unknown[]) {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    attempt: () => {
      const f = failures[calls++];
      return f === undefined ? Promise.resolve("ok") : Promise.reject(f);
    },
  };
}

Deno.test("isUnavailable: connection failures, 429 and 5xx wait; refusals do not", () => {
  assert.ok(isUnavailable(refused()));
  for (const code of [429, 500, 503, 504]) assert.ok(isUnavailable(status(code)), `${code}`);
  for (const code of [400, 401, 403, 404, 409, 422]) assert.ok(!isUnavailable(status(code)));
  assert.ok(!isUnavailable(new TypeError("boom")));
});

Deno.test("ApiServerWait retries refused connections and 503 until the server answers", async () => {
  const clock = new FakeClock();
  const changes: boolean[] = [];
  const wait = new ApiServerWait({
    timeoutMs: 60_000,
    flag: "--startup-timeout",
    clock,
    onWaiting: (w) => changes.push(w),
  });
  const s = scripted([refused(), refused(), refused(), status(503), status(503)]);
  const result = wait.run(s.attempt);
  await clock.tickAsync(30_000);
  assert.equal(await result, "ok");
  assert.equal(s.calls, 6);
  assert.deepEqual(changes, [true, false], "one change into waiting and one out of it");
  assert.equal(wait.waiting, false);
});

Deno.test("ApiServerWait backs off: delays grow and stay under maxDelayMs", async () => {
  const clock = new FakeClock();
  const at: number[] = [];
  const wait = new ApiServerWait({ timeoutMs: 600_000, flag: "--timeout", clock });
  const failures = Array.from({ length: 10 }, refused);
  let calls = 0;
  const result = wait.run(() => {
    at.push(clock.now());
    const f = failures[calls++];
    return f ? Promise.reject(f) : Promise.resolve(1);
  });
  await clock.tickAsync(120_000);
  await result;
  const gaps = at.slice(1).map((t, i) => t - at[i]);
  assert.ok(gaps.every((g) => g > 0 && g <= 4_000), `gaps ${gaps}`);
  assert.ok(gaps.at(-1)! >= 2_000, `the last gaps reach the cap's lower half: ${gaps}`);
  assert.ok(gaps[0] <= 500, `the first retry is quick: ${gaps}`);
});

Deno.test("ApiServerWait does not retry a refusal, unless retryAlso says so", async () => {
  const clock = new FakeClock();
  const wait = new ApiServerWait({ timeoutMs: 60_000, flag: "--timeout", clock });
  const forbidden = status(403, "widgets is forbidden");
  const once = scripted([forbidden]);
  await assert.rejects(wait.run(once.attempt), (err) => err === forbidden);
  assert.equal(once.calls, 1);

  const twice = scripted([forbidden, forbidden]);
  const asked: unknown[] = [];
  const result = wait.run(twice.attempt, (err) => {
    asked.push(err);
    return Promise.resolve(asked.length === 1 ? "403 while not ready" : undefined);
  });
  const rejected = assert.rejects(result, (err) => err === forbidden);
  await clock.tickAsync(5_000);
  await rejected;
  assert.equal(twice.calls, 2, "retried once while retryAlso named a state");
});

Deno.test("ApiServerWait gives up at the deadline with one line naming the flag", async () => {
  const clock = new FakeClock();
  const wait = new ApiServerWait({ timeoutMs: 10_000, flag: "--startup-timeout", clock });
  const s = scripted(Array.from({ length: 1_000 }, refused));
  const result = wait.run(s.attempt);
  const rejected = assert.rejects(result, (err) => {
    assert.ok(err instanceof ApiServerUnavailableError);
    assert.match(
      err.message,
      /^Gave up after waiting 10s for the Kubernetes API server \(--startup-timeout=10s\): Cannot list from Kubernetes API server "https:\/\/127\.0\.0\.1:1": /,
    );
    assert.ok(err.cause instanceof ConnectionError);
    assert.ok(!err.message.includes("\n"));
    return true;
  });
  await clock.tickAsync(11_000);
  await rejected;
  assert.equal(wait.remainingMs, 0);
});

Deno.test("ApiServerWait: a server that does not answer counts as unavailable", async () => {
  const clock = new FakeClock();
  const wait = new ApiServerWait({
    timeoutMs: 60_000,
    flag: "--timeout",
    clock,
    attemptTimeoutMs: 1_000,
  });
  let calls = 0;
  const result = wait.run((signal) => {
    if (++calls > 1) return Promise.resolve("answered");
    // Hangs until the attempt's deadline aborts it, as a request would.
    return new Promise((_, reject) =>
      signal.addEventListener("abort", () => reject(signal.reason))
    );
  });
  await clock.tickAsync(3_000);
  assert.equal(await result, "answered");
  assert.equal(calls, 2);
});

Deno.test("ApiServerWait stops waiting when its signal aborts", async () => {
  const clock = new FakeClock();
  const stop = new AbortController();
  const wait = new ApiServerWait({
    timeoutMs: 60_000,
    flag: "--timeout",
    clock,
    signal: stop.signal,
  });
  const s = scripted(Array.from({ length: 100 }, refused));
  const result = wait.run(s.attempt);
  await clock.tickAsync(2_000);
  stop.abort(new DOMException("stop", "AbortError"));
  await assert.rejects(result, (err) => err instanceof DOMException && err.name === "AbortError");
});

Deno.test("seconds() prints durations as the flags take them", () => {
  assert.deepEqual([500, 2_000, 1_500, 120_000, 150_000].map(seconds), [
    "0.5s",
    "2s",
    "1.5s",
    "2m",
    "2m30s",
  ]);
});

Deno.test("a server that never answers is named when the deadline cuts the only attempt", async () => {
  const clock = new FakeClock();
  const wait = new ApiServerWait({
    timeoutMs: 1_000,
    flag: "--startup-timeout",
    clock,
    server: "https://10.0.0.1:6443",
  });
  const silent = (signal: AbortSignal) =>
    new Promise<never>((_, reject) =>
      signal.addEventListener("abort", () => reject(signal.reason))
    );
  const result = wait.run(silent).catch((err) => err);
  await clock.tickAsync(2_000);
  const err = await result;
  assert.ok(err instanceof ApiServerUnavailableError);
  assert.match(err.message, /no answer from "https:\/\/10\.0\.0\.1:6443" within 1s/);
});

Deno.test("an attempt cut short by the deadline reports the failure before it", async () => {
  const clock = new FakeClock();
  const wait = new ApiServerWait({
    timeoutMs: 1_000,
    flag: "--timeout",
    clock,
    initialDelayMs: 400,
  });
  let calls = 0;
  const attempt = (signal: AbortSignal) =>
    calls++ === 0
      ? Promise.reject(refused())
      : new Promise<never>((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason))
      );
  const result = wait.run(attempt).catch((err) => err);
  await clock.tickAsync(2_000);
  const err = await result;
  assert.ok(err instanceof ApiServerUnavailableError);
  assert.match(err.message, /https:\/\/127\.0\.0\.1:1/, err.message);
  assert.equal(calls, 2);
});
