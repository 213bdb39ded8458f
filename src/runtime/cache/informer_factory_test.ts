import assert from "node:assert/strict";
import type { KubeObject } from "../../core/object.ts";
import { resource } from "../../core/resource.ts";
import type { RawWatchEvent } from "../../client/types.ts";
import { InformerFactory } from "./informer_factory.ts";

const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
const Secret = resource({ group: "", version: "v1", kind: "Secret" });

/** Lists one object per kind; each watch stays open until aborted, counted while open. */
function standIn() {
  let open = 0;
  const client = {
    list: (res: { kind: string }) =>
      Promise.resolve({
        metadata: { resourceVersion: "1" },
        items: [{ metadata: { name: `${res.kind.toLowerCase()}-1`, namespace: "ns" } }],
      }),
    async *watchEvents(
      _res: unknown,
      o: { signal?: AbortSignal },
    ): AsyncGenerator<RawWatchEvent<KubeObject>> {
      open++;
      try {
        await new Promise<void>((resolve) => {
          if (o.signal?.aborted) return resolve();
          o.signal?.addEventListener("abort", () => resolve(), { once: true });
        });
      } finally {
        open--;
      }
      yield* []; // the server closed the watch without an event
    },
  };
  return { client: client as never, open: () => open };
}

Deno.test("InformerFactory.acquire: shared holds; the last release removes the informer", async () => {
  const fake = standIn();
  await using informers = new InformerFactory({ client: fake.client }).start();
  const a = informers.acquire(Secret, { namespace: "ns" });
  const b = informers.acquire(Secret, { namespace: "ns" });
  assert.equal(a.informer, b.informer, "one informer per query");
  let stopped = 0;
  a.informer.addHandler({ onStopped: () => void stopped++ });
  await a.informer.synced();
  assert.equal(a.informer.list().length, 1);

  await a.release();
  await a.release(); // a second release of the same hold does nothing
  assert.equal(informers.size, 1, "b still holds it");
  assert.equal(stopped, 0);

  await b.release();
  assert.equal(informers.size, 0);
  assert.equal(stopped, 1, "its handlers were told");
  assert.equal(a.informer.store.size, 0, "its objects were released");
  assert.throws(() => a.informer.start(), /it was stopped/);
  assert.notEqual(informers.acquire(Secret, { namespace: "ns" }).informer, a.informer);
});

Deno.test("InformerFactory: an informer for() handed out stays after its holds are released", async () => {
  const fake = standIn();
  await using informers = new InformerFactory({ client: fake.client }).start();
  const pinned = informers.for(ConfigMap, { namespace: "ns" });
  const hold = informers.acquire(ConfigMap, { namespace: "ns" });
  await hold.release();
  assert.equal(informers.size, 1);
  await pinned.synced();
  // The watch opens right after the list.
  for (let i = 0; i < 100 && fake.open() === 0; i++) await new Promise((r) => setTimeout(r, 0));
  assert.equal(fake.open(), 1, "its watch is open");
});

Deno.test("InformerFactory.remove: the watch closes, no handler runs after, the query can start anew", async () => {
  const fake = standIn();
  await using informers = new InformerFactory({ client: fake.client }).start();
  const inf = informers.for(Secret);
  const events: string[] = [];
  inf.addHandler({
    onEvent: (ev) => void events.push(ev.type),
    onStopped: () => events.push("stopped"),
  });
  await inf.synced();
  await informers.remove(inf);
  assert.equal(fake.open(), 0, "the watch request was closed");
  assert.deepEqual(events, ["added", "stopped"]);
  assert.deepEqual([...informers.all()], []);
  const fresh = informers.for(Secret);
  await fresh.synced();
  assert.deepEqual(events, ["added", "stopped"], "the removed informer's handler ran again");
});
