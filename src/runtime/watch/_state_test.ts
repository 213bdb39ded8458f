// The watch stream's state machine, driven one step at a time against a stand-in client.
import assert from "node:assert/strict";
import { FakeClock } from "../../testing/fake_clock.ts";
import { watchContext } from "./_context.ts";
import { type Step, step, steps, syncState, type WatchState } from "./_state.ts";
import {
  apiError,
  bookmark,
  type CM,
  cm,
  ConfigMap,
  errorEvent,
  Feed,
  page,
  standIn,
} from "../../../tests/_watch_feed.ts";
import type { WatchOptions } from "./types.ts";

function setup(script: Parameters<typeof standIn>[0], options: WatchOptions = {}) {
  const clock = new FakeClock(1_000_000);
  const fake = standIn(script);
  const ctx = watchContext(ConfigMap, { namespace: "ns", ...options }, fake.client, clock);
  return { clock, fake, ctx };
}

/** The output of a step as `type name@resourceVersion`, or `-` for none. */
function show(s: Step<CM>): string {
  const out = s.output;
  if (!out) return "-";
  if (out.type === "relisted") {
    return `relisted ${out.objects.map((o) => o.metadata.name).join(",")} @${out.resourceVersion}`;
  }
  if (out.type === "bookmark") return `bookmark @${out.resourceVersion}`;
  if (out.type === "failed" || out.type === "error") {
    return `${out.type} ${out.error.code ?? ""} ${out.error.reason}`;
  }
  return `${out.type} ${out.object.metadata.name}@${out.object.metadata.resourceVersion}`;
}

/** The state without its open request, for comparing. */
function bare(s: WatchState<CM>): Record<string, unknown> {
  const { request: _, objects: __, ...rest } = s as Record<string, unknown>;
  return rest;
}

Deno.test("step() lists in pages, yields relisted with every object, then watches from the list's version", async () => {
  const { fake, ctx } = setup({
    lists: [page("5", [cm("a", "3"), cm("b", "4")], "c1"), page("6", [cm("c", "5")])],
  }, { pageSize: 2 });
  const s = await step(ctx, syncState(ctx));
  assert.equal(show(s), "relisted a,b,c @6");
  assert.ok(
    s.output?.type === "relisted" &&
      s.output.objects.every((o) => o.kind === "ConfigMap" && o.apiVersion === "v1"),
  );
  assert.deepEqual(s.next, { phase: "watch", resourceVersion: "6", expiredBefore: false });
  assert.deepEqual(fake.listCalls.map((c) => [c.options.limit, c.options.continue]), [
    [2, undefined],
    [2, "c1"],
  ]);
  const { listRequests, lists, resourceVersion, openRequests } = ctx.stats;
  assert.deepEqual({ listRequests, lists, resourceVersion, openRequests }, {
    listRequests: 2,
    lists: 1,
    resourceVersion: "6",
    openRequests: 0,
  });
});

Deno.test("step() yields watch events and bookmarks in order, tracking their resourceVersion", async () => {
  const { fake, ctx } = setup({
    watches: [[
      { type: "ADDED", object: cm("d", "7") },
      { type: "MODIFIED", object: cm("a", "8") },
      bookmark("9"),
      { type: "DELETED", object: cm("b", "10") },
    ]],
  });
  let s = await step(ctx, { phase: "watch", resourceVersion: "6", expiredBefore: true });
  assert.equal(ctx.stats.state, "watching");
  const { options } = fake.watchCalls[0];
  assert.equal(options.resourceVersion, "6");
  assert.equal(options.allowWatchBookmarks, true);
  assert.equal(options.sendInitialEvents, undefined);
  const timeout = options.timeoutSeconds as number;
  assert.ok(timeout >= 300 && timeout < 600, `timeoutSeconds ${timeout}`);
  const seen: string[] = [];
  for (let i = 0; i < 4; i++) {
    s = await step(ctx, s.next);
    seen.push(`${show(s)} -> ${(s.next as { resourceVersion: string }).resourceVersion}`);
    assert.equal(
      ctx.stats.resourceVersion,
      (s.next as { resourceVersion: string }).resourceVersion,
    );
    assert.equal(s.next.expiredBefore, false, "a watch event ends the run of expiries");
  }
  assert.deepEqual(seen, [
    "added d@7 -> 7",
    "modified a@8 -> 8",
    "bookmark @9 -> 9",
    "deleted b@10 -> 10",
  ]);
  assert.equal(ctx.stats.openRequests, 1);
  assert.equal(ctx.stats.watchRequests, 1);
});

Deno.test("step() watches again from the last resourceVersion when the server ends a watch, without a relist", async () => {
  const { fake, ctx } = setup({ watches: [[{ type: "ADDED", object: cm("d", "7") }, "end"], []] });
  let s = await step(ctx, { phase: "watch", resourceVersion: "6", expiredBefore: false });
  s = await step(ctx, s.next);
  s = await step(ctx, s.next);
  assert.equal(show(s), "-");
  assert.deepEqual(s.next, { phase: "watch", resourceVersion: "7", expiredBefore: false });
  assert.equal(fake.watchCalls[0].options.signal?.aborted, true, "the ended request is closed");
  assert.equal(ctx.stats.openRequests, 0);
  await step(ctx, s.next);
  assert.equal(fake.watchCalls[1].options.resourceVersion, "7");
  assert.equal(fake.listCalls.length, 0);
  assert.equal(ctx.stats.failures, 0);
});

Deno.test("step() fails a watch the server closes at once without an event as ShortWatch", async () => {
  const { ctx } = setup({ watches: [["end"]] });
  let s = await step(ctx, { phase: "watch", resourceVersion: "6", expiredBefore: true });
  s = await step(ctx, s.next);
  assert.equal(show(s), "failed  ShortWatch");
  assert.deepEqual(s.next, { phase: "watch", resourceVersion: "6", expiredBefore: true });
  assert.equal(ctx.stats.openRequests, 0);
});

Deno.test("step() resumes at once, without a failure, when a watch that worked breaks off", async () => {
  const { ctx } = setup({
    watches: [[{ type: "ADDED", object: cm("d", "7") }, new Error("connection reset")]],
  });
  let s = await step(ctx, { phase: "watch", resourceVersion: "6", expiredBefore: false });
  s = await step(ctx, s.next);
  s = await step(ctx, s.next);
  assert.equal(show(s), "-");
  assert.deepEqual(s.next, { phase: "watch", resourceVersion: "7", expiredBefore: false });
});

Deno.test("step() syncs again on 410 Gone from a watch, at once the first time, failing when the next watch is Gone too", async () => {
  const { fake, ctx } = setup({
    lists: [page("20", [cm("a", "3")])],
    watches: [[apiError(410)], [errorEvent(410)]],
  });
  let s = await step(ctx, { phase: "watch", resourceVersion: "6", expiredBefore: false });
  s = await step(ctx, s.next);
  assert.equal(show(s), "-", "the first expiry is no failure");
  assert.deepEqual(s.next, { phase: "sync-list", expiredBefore: true });
  assert.equal(ctx.stats.openRequests, 0);
  s = await step(ctx, s.next);
  assert.equal(show(s), "relisted a @20");
  s = await step(ctx, s.next);
  assert.equal(fake.watchCalls[1].options.resourceVersion, "20");
  s = await step(ctx, s.next);
  assert.equal(show(s), "failed 410 Expired");
  assert.ok(s.output?.type === "failed");
  assert.match(s.output.error.message, /resourceVersion "20" expired right after a list$/);
  assert.deepEqual(s.next, { phase: "sync-list", expiredBefore: true });
  assert.equal(ctx.stats.lists, 1);
});

Deno.test("step() syncs again on a 410 ERROR event among a watch-list's initial events", async () => {
  const { fake, ctx } = setup({
    watches: [[{ type: "ADDED", object: cm("a", "3") }, errorEvent(410)], [errorEvent(410)]],
  }, { initialSync: "watchList" });
  let s = await step(ctx, syncState(ctx));
  assert.equal(s.next.phase, "initial-events");
  assert.equal(ctx.stats.state, "listing");
  const { options } = fake.watchCalls[0];
  assert.equal(options.sendInitialEvents, true);
  assert.equal(options.resourceVersionMatch, "NotOlderThan");
  assert.equal(options.resourceVersion, undefined);
  s = await step(ctx, s.next);
  assert.equal(show(s), "-");
  assert.equal(s.next.phase, "initial-events");
  assert.equal(ctx.stats.resourceVersion, undefined, "initial events move no resourceVersion");
  s = await step(ctx, s.next);
  assert.equal(show(s), "-");
  assert.deepEqual(s.next, { phase: "sync-watch-list", expiredBefore: true });
  assert.equal(options.signal?.aborted, true);
  assert.equal(ctx.stats.openRequests, 0);
  // Gone again before a watch event: a failure to back off from, syncing by watch-list again.
  s = await step(ctx, s.next);
  s = await step(ctx, s.next);
  assert.equal(show(s), "failed 410 Expired");
  assert.ok(s.output?.type === "failed");
  assert.match(s.output.error.message, /expired right after a list$/);
  assert.deepEqual(s.next, { phase: "sync-watch-list", expiredBefore: true });
});

Deno.test("step() yields a watch-list's objects as relisted at its end bookmark, then watches on the same request", async () => {
  const { fake, ctx } = setup({
    watches: [[
      { type: "ADDED", object: cm("a", "3") },
      { type: "ADDED", object: cm("b", "4") },
      { type: "DELETED", object: cm("a", "5") },
      bookmark("9", true),
      { type: "MODIFIED", object: cm("b", "10") },
    ]],
  }, { initialSync: "watchList" });
  let s = await step(ctx, syncState(ctx));
  const seen: string[] = [];
  for (let i = 0; i < 5; i++) {
    s = await step(ctx, s.next);
    seen.push(`${show(s)} -> ${s.next.phase}`);
  }
  assert.deepEqual(seen, [
    "- -> initial-events",
    "- -> initial-events",
    "- -> initial-events",
    "relisted b @9 -> watching",
    "modified b@10 -> watching",
  ]);
  assert.equal(fake.watchCalls.length, 1);
  assert.equal(fake.listCalls.length, 0);
  const { lists, listRequests, resourceVersion, state } = ctx.stats;
  assert.deepEqual({ lists, listRequests, resourceVersion, state }, {
    lists: 1,
    listRequests: 0,
    resourceVersion: "10",
    state: "watching",
  });
});

for (const code of [400, 422]) {
  Deno.test(`step() lists in pages from then on when the server refuses a watch-list with ${code}`, async () => {
    const { fake, ctx } = setup({
      lists: [page("20", [])],
      watches: [[apiError(code)], [apiError(410)]],
    }, { initialSync: "watchList" });
    let s = await step(ctx, syncState(ctx));
    s = await step(ctx, s.next);
    assert.equal(show(s), "-", "a refusal is no failure");
    assert.deepEqual(s.next, { phase: "sync-list", expiredBefore: false });
    assert.equal(ctx.stats.initialSync, "list");
    s = await step(ctx, s.next);
    s = await step(ctx, s.next);
    s = await step(ctx, s.next);
    assert.deepEqual(s.next, { phase: "sync-list", expiredBefore: true }, "Gone syncs by list");
    assert.equal(fake.watchCalls.filter((w) => w.options.sendInitialEvents).length, 1);
  });
}

Deno.test("step() lists in pages once when a watch-list fails otherwise, ends or stalls before its end bookmark", async () => {
  const stall = new Feed();
  const { fake, ctx, clock } = setup({
    watches: [[apiError(500)], [{ type: "ADDED", object: cm("a", "3") }, "end"], stall],
  }, { initialSync: "watchList", stallTimeoutMs: 1_000 });
  const ends: string[] = [];
  for (let i = 0; i < 3; i++) {
    let s = await step(ctx, syncState(ctx));
    do {
      const pending = step(ctx, s.next);
      if (i === 2) await clock.tickAsync(1_000);
      s = await pending;
    } while (s.next.phase === "initial-events");
    ends.push(`${show(s)} -> ${JSON.stringify(bare(s.next))}`);
  }
  const paged = '-> {"phase":"sync-list","expiredBefore":false}';
  assert.deepEqual(ends, [`- ${paged}`, `- ${paged}`, `- ${paged}`]);
  assert.equal(ctx.stats.initialSync, "watchList", "the next sync tries a watch-list again");
  assert.deepEqual(syncState(ctx), { phase: "sync-watch-list", expiredBefore: false });
  assert.equal(ctx.stats.stalls, 1);
  assert.equal(fake.resets, 1);
  assert.equal(ctx.stats.failures, 0);
  assert.equal(ctx.stats.openRequests, 0);
});

Deno.test("step() aborts a watch with no event within stallTimeoutMs and watches again; a busy consumer is no stall", async () => {
  const feed = new Feed([{ type: "ADDED", object: cm("d", "7") }]);
  const { fake, ctx, clock } = setup({ watches: [feed] }, { stallTimeoutMs: 1_000 });
  let s = await step(ctx, { phase: "watch", resourceVersion: "6", expiredBefore: false });
  s = await step(ctx, s.next);
  assert.equal(show(s), "added d@7");
  await clock.tickAsync(5_000); // the consumer holds the event
  feed.push({ type: "MODIFIED", object: cm("d", "8") });
  s = await step(ctx, s.next);
  assert.equal(show(s), "modified d@8");
  let settled = false;
  const pending = step(ctx, s.next).finally(() => settled = true);
  await clock.tickAsync(999);
  assert.equal(settled, false);
  await clock.tickAsync(1);
  s = await pending;
  assert.equal(show(s), "failed  Stalled");
  assert.ok(s.output?.type === "failed");
  assert.equal(
    s.output.error.message,
    'Cannot watch ConfigMap (v1) in namespace "ns": no event or bookmark arrived within 1000 ms (stalled)',
  );
  assert.deepEqual(s.next, { phase: "watch", resourceVersion: "8", expiredBefore: false });
  assert.equal(fake.watchCalls[0].options.signal?.aborted, true);
  assert.equal(ctx.stats.stalls, 1);
  assert.equal(fake.resets, 1, "pooled connections are reset after a stall");
  assert.equal(ctx.stats.openRequests, 0);
});

Deno.test("step() fails a list page that does not arrive within stallTimeoutMs as Stalled", async () => {
  const { fake, ctx, clock } = setup({}, { stallTimeoutMs: 1_000 });
  const pending = step(ctx, syncState(ctx));
  await clock.tickAsync(1_000);
  const s = await pending;
  assert.equal(show(s), "failed  Stalled");
  assert.ok(s.output?.type === "failed");
  assert.match(s.output.error.message, /^Cannot list .*: no list page arrived within 1000 ms/);
  assert.deepEqual(s.next, { phase: "sync-list", expiredBefore: false });
  assert.equal(fake.listCalls[0].options.signal?.aborted, true);
  assert.deepEqual([ctx.stats.stalls, fake.resets, ctx.stats.openRequests], [1, 1, 0]);
});

Deno.test("steps() ends at once when the signal aborts, closing the open request, without an output", async () => {
  const ctl = new AbortController();
  const { fake, ctx } = setup({ lists: [page("5", [])] }, { signal: ctl.signal });
  const outputs: string[] = [];
  for await (const out of steps(ctx, syncState(ctx))) {
    outputs.push(out.type);
    // The watch opens on the next pull and then waits: abort it while it does.
    setTimeout(() => ctl.abort(), 0);
  }
  assert.deepEqual(outputs, ["relisted"]);
  assert.equal(fake.watchCalls[0].options.signal?.aborted, true);
  assert.equal(ctx.stats.openRequests, 0);
});
