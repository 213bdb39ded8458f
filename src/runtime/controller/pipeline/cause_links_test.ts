import assert from "node:assert/strict";
import { CauseLinks, MAX_CAUSE_LINKS } from "./cause_links.ts";
import type { SpanLink } from "../../../util/trace.ts";

const link = (n: number) => ({ n }) as unknown as SpanLink;

Deno.test("CauseLinks: the first change is the parent, every other cause a link", () => {
  const t = new CauseLinks();
  t.add("a", link(0), false); // an initial list: a link, never the parent
  t.add("a", link(1), true);
  t.add("a", undefined, true); // tracing off or no span: nothing
  t.add("a", link(2), true);
  t.add("b", link(3), false);
  assert.deepEqual(t.take("a"), { parent: link(1), links: [link(0), link(2)], count: 3 });
  // Taken: later causes are the next reconcile's.
  assert.deepEqual(t.take("a"), { links: [], count: 0 });
  assert.deepEqual(t.take("b"), { links: [link(3)], count: 1 });
});

Deno.test("CauseLinks: a requeue only links, so requeues never chain one trace", () => {
  const t = new CauseLinks();
  t.add("k", link(9), false);
  const { parent, links } = t.take("k");
  assert.equal(parent, undefined);
  assert.deepEqual(links, [link(9)]);
});

Deno.test("CauseLinks is bounded: the parent and the newest links are kept", () => {
  const t = new CauseLinks();
  const all = Array.from({ length: 40 }, (_, i) => link(i));
  for (const l of all) t.add("k", l, true);
  const { parent, links, count } = t.take("k");
  assert.equal(count, 40);
  assert.equal(parent, all[0]);
  assert.deepEqual(links, all.slice(40 - MAX_CAUSE_LINKS));
});

Deno.test("CauseLinks does not repeat one span that queued a key twice", () => {
  const t = new CauseLinks();
  const l = link(1), m = link(2);
  t.add("k", l, true);
  t.add("k", l, true);
  t.add("k", m, false);
  t.add("k", m, false);
  assert.deepEqual(t.take("k"), { parent: l, links: [m], count: 4 });
});
