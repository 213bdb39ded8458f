import assert from "node:assert/strict";
import { MAX_TRIGGER_LINKS, TriggerLinks } from "./_trigger_links.ts";
import type { SpanLink } from "../../util/trace.ts";

const link = (n: number) => ({ n }) as unknown as SpanLink;

Deno.test("TriggerLinks: the first change is the parent, every other trigger a link", () => {
  const t = new TriggerLinks();
  t.add("a", link(0), false); // an initial list: a link, never the parent
  t.add("a", link(1), true);
  t.add("a", undefined, true); // tracing off or no span: nothing
  t.add("a", link(2), true);
  t.add("b", link(3), false);
  assert.deepEqual(t.take("a"), { parent: link(1), links: [link(0), link(2)], count: 3 });
  // Taken: later triggers are the next reconcile's.
  assert.deepEqual(t.take("a"), { links: [], count: 0 });
  assert.deepEqual(t.take("b"), { links: [link(3)], count: 1 });
});

Deno.test("TriggerLinks: a requeue only links, so requeues never chain one trace", () => {
  const t = new TriggerLinks();
  t.add("k", link(9), false);
  const { parent, links } = t.take("k");
  assert.equal(parent, undefined);
  assert.deepEqual(links, [link(9)]);
});

Deno.test("TriggerLinks is bounded: the parent and the newest links are kept", () => {
  const t = new TriggerLinks();
  const all = Array.from({ length: 40 }, (_, i) => link(i));
  for (const l of all) t.add("k", l, true);
  const { parent, links, count } = t.take("k");
  assert.equal(count, 40);
  assert.equal(parent, all[0]);
  assert.deepEqual(links, all.slice(40 - MAX_TRIGGER_LINKS));
});

Deno.test("TriggerLinks does not repeat one span that queued a key twice", () => {
  const t = new TriggerLinks();
  const l = link(1), m = link(2);
  t.add("k", l, true);
  t.add("k", l, true);
  t.add("k", m, false);
  t.add("k", m, false);
  assert.deepEqual(t.take("k"), { parent: l, links: [m], count: 4 });
});
