import assert from "node:assert/strict";
import {
  heapBudget,
  heapFlags,
  parseMemoryQuantity,
  readCgroupMemoryLimit,
} from "./memory_limit.ts";

const MI = 2 ** 20;

function files(map: Record<string, string>) {
  return { read: (path: string) => map[path] };
}

Deno.test("parseMemoryQuantity reads Kubernetes quantities and refuses the rest", () => {
  assert.equal(parseMemoryQuantity("256Mi"), 256 * MI);
  assert.equal(parseMemoryQuantity("1Gi"), 2 ** 30);
  assert.equal(parseMemoryQuantity("500M"), 500e6);
  assert.equal(parseMemoryQuantity("268435456"), 268435456);
  for (const bad of ["", "256MB", "-1Mi", "0", "Mi", "1.5.2Gi", "max"]) {
    assert.equal(parseMemoryQuantity(bad), undefined, bad);
  }
});

Deno.test("heapBudget leaves native memory outside the heap at every size", () => {
  for (const mib of [64, 128, 256, 512, 1024, 8192]) {
    const b = heapBudget(mib * MI);
    assert.ok(b.heapLimitBytes < b.limitBytes, `${mib}Mi: heap ${b.heapLimitBytes}`);
    assert.ok(b.semiSpaceMiB >= 1 && b.semiSpaceMiB <= 16);
    assert.equal(b.heapLimitBytes, (b.oldSpaceMiB + 3 * b.semiSpaceMiB) * MI);
  }
  assert.equal(heapFlags(heapBudget(256 * MI)), "--max-old-space-size=144,--max-semi-space-size=4");
  assert.throws(() => heapBudget(0), RangeError);
});

Deno.test("readCgroupMemoryLimit: cgroup v1, the own cgroup's limit", () => {
  const got = readCgroupMemoryLimit(files({
    "/proc/self/cgroup": "5:devices:/\n4:memory:/pod/abc\n0::/\n",
    "/sys/fs/cgroup/memory/pod/abc/memory.limit_in_bytes": "268435456\n",
    "/sys/fs/cgroup/memory/pod/memory.limit_in_bytes": "1073741824\n",
    "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
  }));
  assert.deepEqual(got, {
    bytes: 256 * MI,
    source: "/sys/fs/cgroup/memory/pod/abc/memory.limit_in_bytes",
  });
});

Deno.test("readCgroupMemoryLimit: a parent's smaller limit binds", () => {
  const got = readCgroupMemoryLimit(files({
    "/proc/self/cgroup": "0::/kubepods/pod1/c1\n",
    "/sys/fs/cgroup/kubepods/pod1/c1/memory.max": "max\n",
    "/sys/fs/cgroup/kubepods/pod1/memory.max": "536870912\n",
    "/sys/fs/cgroup/kubepods/memory.max": "max\n",
  }));
  assert.deepEqual(got, { bytes: 512 * MI, source: "/sys/fs/cgroup/kubepods/pod1/memory.max" });
});

Deno.test("readCgroupMemoryLimit: cgroup namespace (own cgroup is the root), no limit", () => {
  assert.deepEqual(
    readCgroupMemoryLimit(files({
      "/proc/self/cgroup": "0::/\n",
      "/sys/fs/cgroup/memory.max": "268435456\n",
    })),
    { bytes: 256 * MI, source: "/sys/fs/cgroup/memory.max" },
  );
  const none = readCgroupMemoryLimit(files({
    "/proc/self/cgroup": "0::/\n",
    "/sys/fs/cgroup/memory.max": "max\n",
  }));
  assert.equal(none?.bytes, undefined);
  assert.equal(readCgroupMemoryLimit(files({})), undefined);
});

Deno.test("readCgroupMemoryLimit: a v1 path absent in the container's mount walks up", () => {
  const got = readCgroupMemoryLimit(files({
    "/proc/self/cgroup": "4:memory:/docker/0123\n",
    "/sys/fs/cgroup/memory/memory.limit_in_bytes": "134217728\n",
  }));
  assert.equal(got?.bytes, 128 * MI);
});
