import assert from "node:assert/strict";
import { reconcile, requeue, TerminalError, watchesFrom } from "./reconcile.ts";
import { ConfigMap, Pod, Secret } from "../../core/kinds.ts";
import { reconcileAllOn, reconcileOn } from "../source/external.ts";
import { daemon, every } from "../source/timers.ts";
import { generationChanged } from "./predicates.ts";

async function* never(): AsyncGenerator<string> {}

Deno.test("reconcile() describes a controller with defaults", () => {
  const c = reconcile(Secret, { reconcile() {} });
  assert.equal(c.name, "secret");
  assert.equal(c.resource, Secret);
  assert.deepEqual([c.owns, c.watches, c.predicates], [[], [], []]);
  assert.equal(c.maxConcurrent, 1);
  assert.equal(c.reservedWorkers, 0);
  assert.equal(c.fieldManager, "secret");
  assert.equal(c.finalizer, undefined);
  assert.equal(c.applySetParent, undefined);
  assert.deepEqual([c.external, c.timers, c.daemons, c.watchesFrom], [
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
  assert.ok(Object.isFrozen(c) && Object.isFrozen(c.owns));
  const d = reconcile(Secret, {
    name: "keys",
    owns: [ConfigMap],
    finalizer: "example.com/cleanup",
    finalize() {},
    primary: { predicates: [generationChanged] },
    run: { maxConcurrent: 4, fieldManager: "keys-operator" },
    reconcile() {},
  });
  assert.deepEqual(
    [d.name, d.owns, d.finalizer, d.maxConcurrent, d.reservedWorkers, d.fieldManager],
    ["keys", [ConfigMap], "example.com/cleanup", 4, 1, "keys-operator"],
  );
  assert.deepEqual(d.predicates, [generationChanged]);
});

Deno.test("reconcile() sorts sources by type and joins the watchesFrom entries", () => {
  const keys = reconcileOn(never());
  const all = reconcileAllOn(never());
  const timer = every(1_000, () => {});
  const task = daemon(() => {});
  const watch = { resource: Pod, map: () => [] };
  const c = reconcile(Secret, {
    sources: [timer, keys, task, all],
    watches: [
      watch,
      watchesFrom(() => [{ resource: ConfigMap, map: () => [] }]),
      watchesFrom(() => [watch]),
    ],
    reconcile() {},
  });
  assert.deepEqual(c.external, [keys, all]);
  assert.deepEqual(c.timers, [timer]);
  assert.deepEqual(c.daemons, [task]);
  assert.deepEqual(c.watches, [watch], "run-time watches are not static ones");
  assert.deepEqual(c.watchesFrom?.({} as never).map((w) => w.resource), [ConfigMap, Pod]);
});

Deno.test("reconcile() rejects inconsistent options", () => {
  const r = () => {};
  assert.throws(() => reconcile(Secret, { reconcile: r, finalize: r }), /needs a finalizer name/);
  assert.throws(
    () => reconcile(Secret, { reconcile: r, finalizer: "a.io/x" }),
    /finalizer "a.io\/x" needs a finalize function/,
  );
  assert.throws(
    () => reconcile(Secret, { reconcile: r, finalize: r, finalizer: "not valid!" }),
    TypeError,
  );
  assert.throws(
    () => reconcile(Secret, { reconcile: r, run: { maxConcurrent: 0 } }),
    /^RangeError: Cannot define controller "secret": run\.maxConcurrent must be a positive integer, got "0"$/,
  );
  assert.throws(() => reconcile(Secret, { reconcile: r, run: { maxConcurrent: 1.5 } }), RangeError);
  assert.throws(
    () => reconcile(Secret, { reconcile: r, run: { maxConcurrent: 2, reservedWorkers: 2 } }),
    /run\.reservedWorkers must be an integer from 0 to run\.maxConcurrent - 1 \(1\), got "2"/,
  );
  assert.throws(
    () => reconcile(Secret, { reconcile: r, sources: [{} as never] }),
    /sources\[0\] is not made by reconcileOn\(\), reconcileAllOn\(\), every\(\) or daemon\(\)/,
  );
  assert.throws(() => watchesFrom("x" as never), TypeError);
});

Deno.test("reconcile() names an unknown option and the known ones", () => {
  const bad = (options: object) => () =>
    reconcile(Secret, { reconcile() {}, ...options } as Parameters<typeof reconcile>[1]);
  assert.throws(
    bad({ maxConcurrent: 2 }),
    /^TypeError: Cannot define controller "secret": unknown option "maxConcurrent" \(known: name, reconcile, finalizer, finalize, primary, owns, watches, reads, sources, run, retry, onError, observedGeneration\)$/,
  );
  assert.throws(bad({ run: { concurrency: 2 } }), /unknown option "run\.concurrency"/);
  assert.throws(bad({ primary: { scope: {} } }), /unknown option "primary\.scope"/);
  assert.throws(
    bad({ observedGeneration: "no" }),
    /^TypeError: Cannot define controller "secret": observedGeneration must be true or false, got "no"$/,
  );
});

Deno.test("requeue and TerminalError", () => {
  assert.equal(requeue(0).requeueAfterMs, 0);
  assert.throws(() => requeue(-1), RangeError);
  assert.throws(() => requeue(NaN), /got "NaN"/);
  const cause = new Error("bad");
  const e = new TerminalError("Cannot do it", { cause });
  assert.equal(e.name, "TerminalError");
  assert.equal(e.cause, cause);
});

Deno.test("reconcile() takes a run.timeoutMs, off by default, and refuses a bad one", () => {
  assert.equal(reconcile(Secret, { reconcile() {} }).timeoutMs, undefined);
  assert.equal(reconcile(Secret, { reconcile() {}, run: { timeoutMs: 1_500 } }).timeoutMs, 1_500);
  for (const timeoutMs of [0, -1, NaN, Infinity]) {
    assert.throws(
      () => reconcile(Secret, { reconcile() {}, run: { timeoutMs } }),
      /run\.timeoutMs must be a positive finite number/,
      `timeoutMs ${timeoutMs}`,
    );
  }
});
