import assert from "node:assert/strict";
import { MAX_TRIGGER_LINKS, TriggerLinks } from "./_trigger_links.ts";
import type { SpanLink } from "../../util/trace.ts";

const link = (n: number) => ({ n }) as unknown as SpanLink;

Deno.test("TriggerLinks keeps every trigger merged into one reconcile, in order", () => {
  const t = new TriggerLinks();
  t.add("a", link(1));
  t.add("a", undefined); // tracing off or no span: nothing
  t.add("a", link(2));
  t.add("b", link(3));
  assert.deepEqual(t.take("a"), { links: [link(1), link(2)], count: 2 });
  // Taken: later triggers are the next reconcile's.
  assert.deepEqual(t.take("a"), { links: [], count: 0 });
  assert.deepEqual(t.take("b").links, [link(3)]);
});

Deno.test("TriggerLinks is bounded: the first (the parent) and the newest are kept", () => {
  const t = new TriggerLinks();
  const all = Array.from({ length: 40 }, (_, i) => link(i));
  for (const l of all) t.add("k", l);
  const { links, count } = t.take("k");
  assert.equal(count, 40);
  assert.equal(links.length, MAX_TRIGGER_LINKS);
  assert.equal(links[0], all[0]);
  assert.deepEqual(links.slice(1), all.slice(40 - (MAX_TRIGGER_LINKS - 1)));
});

Deno.test("TriggerLinks does not repeat one span that queued a key twice in a row", () => {
  const t = new TriggerLinks();
  const l = link(1);
  t.add("k", l);
  t.add("k", l);
  assert.deepEqual(t.take("k"), { links: [l], count: 2 });
});
