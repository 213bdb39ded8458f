// Work queue throughput. Each iteration moves N keys through the queue, so
// events/s = N × iter/s as reported by `deno bench`:
//
//   deno bench -A bench/workqueue_bench.ts
//
//   deno run bench/workqueue_bench.ts   # prints events/s per case
import { FakeClock } from "../src/testing/fake_clock.ts";
import { exponentialRateLimiter } from "../src/runtime/queue/rate_limiter.ts";
import { WorkQueue } from "../src/runtime/queue/workqueue.ts";

const N = 10_000;
const keys = Array.from({ length: N }, (_, i) => `default/app-${i}`);

async function drain(queue: WorkQueue<string>): Promise<number> {
  let n = 0;
  while (queue.len() > 0) {
    const item = await queue.get();
    if (item.shutdown) break;
    queue.done(item.key);
    n++;
  }
  return n;
}

async function addGetDone(): Promise<number> {
  const queue = new WorkQueue<string>({ clock: new FakeClock() });
  for (const key of keys) queue.add(key);
  return await drain(queue);
}

async function addDuplicates(): Promise<number> {
  const queue = new WorkQueue<string>({ clock: new FakeClock() });
  for (let i = 0; i < N; i++) queue.add(keys[i % 100]);
  await drain(queue);
  return N;
}

async function concurrentWorkers(workers: number): Promise<number> {
  const queue = new WorkQueue<string>({ clock: new FakeClock() });
  let processed = 0;
  const loops = Array.from({ length: workers }, async () => {
    for await (const key of queue) {
      processed++;
      queue.done(key);
      if (processed === N) queue.shutDown();
    }
  });
  for (const key of keys) queue.add(key);
  await Promise.all(loops);
  return processed;
}

async function addAfter(): Promise<number> {
  const clock = new FakeClock();
  const queue = new WorkQueue<string>({ clock });
  for (let i = 0; i < N; i++) queue.addAfter(keys[i], 1 + (i % 1000));
  clock.tick(1000);
  return await drain(queue);
}

async function addRateLimited(): Promise<number> {
  const clock = new FakeClock();
  const queue = new WorkQueue<string>({ clock, rateLimiter: exponentialRateLimiter() });
  for (const key of keys) queue.addRateLimited(key);
  clock.tick(5);
  return await drain(queue);
}

async function withMetrics(): Promise<number> {
  let adds = 0;
  const queue = new WorkQueue<string>({
    clock: new FakeClock(),
    metrics: {
      add: () => adds++,
      depth: () => {},
      queueDuration: () => {},
      workDuration: () => {},
    },
  });
  for (const key of keys) queue.add(key);
  await drain(queue);
  return adds;
}

const cases: [string, () => Promise<number>][] = [
  ["add + get + done, distinct keys", addGetDone],
  ["add 100 keys x100 (de-dup) + get + done", addDuplicates],
  ["8 concurrent workers, get + done", () => concurrentWorkers(8)],
  ["addAfter + timer + get + done", addAfter],
  ["addRateLimited + timer + get + done", addRateLimited],
  ["add + get + done with metrics hooks", withMetrics],
];

for (const [name, fn] of cases) {
  Deno.bench({
    name: `${name} (${N} keys per iteration)`,
    group: "workqueue",
    baseline: fn === addGetDone,
    async fn() {
      const n = await fn();
      if (n !== N) throw new Error(`Expected ${N} events, got ${n}`);
    },
  });
}

if (import.meta.main) {
  // `deno run bench/workqueue_bench.ts` (not `deno bench`) prints events/s directly.
  for (const [name, fn] of cases) {
    for (let i = 0; i < 5; i++) await fn(); // warm up
    const rounds = 20;
    const start = performance.now();
    for (let i = 0; i < rounds; i++) await fn();
    const seconds = (performance.now() - start) / 1000;
    console.log(`${name}: ${Math.round((rounds * N) / seconds).toLocaleString("en")} events/s`);
  }
}
