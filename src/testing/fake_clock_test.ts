import assert from "node:assert/strict";
import { FakeClock } from "./fake_clock.ts";

Deno.test("FakeClock fires timers in due order, ties in set order, at their due time", () => {
  const clock = new FakeClock(1_000);
  const fired: string[] = [];
  const log = (name: string) => () => fired.push(`${name}@${clock.now()}`);
  clock.setTimeout(log("c"), 30);
  clock.setTimeout(log("a"), 10);
  clock.setTimeout(log("b1"), 20);
  clock.setTimeout(log("b2"), 20);
  clock.setTimeout(log("z"), -5);
  assert.equal(clock.pending, 5);
  assert.equal(clock.nextDue, 1_000);
  clock.tick(25);
  assert.deepEqual(fired, ["z@1000", "a@1010", "b1@1020", "b2@1020"]);
  assert.equal(clock.now(), 1_025);
  assert.equal(clock.pending, 1);
  clock.tick(4);
  assert.equal(fired.length, 4);
  clock.tick(1);
  assert.deepEqual(fired.at(-1), "c@1030");
  assert.equal(clock.pending, 0);
  assert.equal(clock.nextDue, undefined);
});

Deno.test("FakeClock clearTimeout cancels only the given timer", () => {
  const clock = new FakeClock();
  const fired: number[] = [];
  const a = clock.setTimeout(() => fired.push(1), 10);
  clock.setTimeout(() => fired.push(2), 10);
  clock.clearTimeout(a);
  clock.clearTimeout(a);
  clock.clearTimeout(12345);
  clock.tick(10);
  assert.deepEqual(fired, [2]);
});

Deno.test("FakeClock tick runs timers set by timers when due within the tick", () => {
  const clock = new FakeClock();
  const fired: number[] = [];
  const chain = () => {
    fired.push(clock.now());
    clock.setTimeout(chain, 10);
  };
  clock.setTimeout(chain, 10);
  clock.tick(35);
  assert.deepEqual(fired, [10, 20, 30]);
  assert.equal(clock.nextDue, 40);
});

Deno.test("FakeClock tick does not run promise continuations, tickAsync does", async () => {
  const run = async (advance: (clock: FakeClock) => Promise<void> | void) => {
    const clock = new FakeClock();
    const steps: number[] = [];
    (async () => {
      for (let i = 0; i < 3; i++) {
        await clock.sleep(10);
        steps.push(clock.now());
      }
    })();
    await advance(clock);
    return steps;
  };
  // The first sleep's continuation only runs after tick returned, at 30 instead of 10.
  assert.deepEqual(await run((clock) => clock.tick(30)), [30]);
  assert.deepEqual(await run((clock) => clock.tickAsync(30)), [10, 20, 30]);
  assert.deepEqual(await run((clock) => clock.tickAsync(25)), [10, 20]);
});

Deno.test("FakeClock nextAsync jumps to the next timer", async () => {
  const clock = new FakeClock();
  assert.equal(await clock.nextAsync(), false);
  const fired: number[] = [];
  clock.setTimeout(() => fired.push(clock.now()), 70);
  clock.setTimeout(() => fired.push(clock.now()), 40);
  assert.equal(await clock.nextAsync(), true);
  assert.deepEqual(fired, [40]);
  assert.equal(clock.now(), 40);
  assert.equal(await clock.nextAsync(), true);
  assert.deepEqual(fired, [40, 70]);
});

Deno.test("FakeClock sleep rejects with the abort reason and clears its timer", async () => {
  const clock = new FakeClock();
  const controller = new AbortController();
  const slept = clock.sleep(100, controller.signal);
  assert.equal(clock.pending, 1);
  controller.abort(new Error("Stop"));
  await assert.rejects(slept, { message: "Stop" });
  assert.equal(clock.pending, 0);
  await assert.rejects(clock.sleep(1, controller.signal), { message: "Stop" });
  assert.equal(clock.pending, 0);
});

Deno.test("FakeClock sleep resolves exactly at its due time", async () => {
  const clock = new FakeClock();
  let resolved = false;
  clock.sleep(50).then(() => resolved = true);
  await clock.tickAsync(49);
  assert.equal(resolved, false);
  await clock.tickAsync(1);
  assert.equal(resolved, true);
});

Deno.test("FakeClock tick propagates a throwing timer and keeps later timers", () => {
  const clock = new FakeClock();
  const fired: number[] = [];
  clock.setTimeout(() => {
    throw new Error("Boom");
  }, 10);
  clock.setTimeout(() => fired.push(clock.now()), 20);
  assert.throws(() => clock.tick(30), { message: "Boom" });
  assert.equal(clock.now(), 10);
  clock.tick(20);
  assert.deepEqual(fired, [20]);
});

Deno.test("FakeClock rejects bad arguments", async () => {
  assert.throws(() => new FakeClock(NaN), RangeError);
  const clock = new FakeClock();
  assert.throws(() => clock.tick(-1), RangeError);
  assert.throws(() => clock.tick(Infinity), RangeError);
  await assert.rejects(clock.tickAsync(NaN), RangeError);
});
