// Conversions that cannot break a list, on a real control plane, with the operator of
// tests/fixtures/tick_operator.ts run as a user runs it (`run` outside the cluster): its Tick's
// v1 → v2 conversion throws for a schedule that is not five fields ("@hourly").
//
// Shows: creating or updating such an object is refused by the validating webhook with one line
// naming the version and the conversion's own message, so `kubectl get` keeps working at every
// version; an object stored before the rule (written while no operator ran) fails reads at v2 with
// the conversion's message naming it, while the operator logs it once per object and change, not
// once per retry (the count over the window is printed); single objects and v1 lists keep working.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { Tick } from "./fixtures/tick_operator.ts";
import { NO_SERVERS, startExample, waitFor } from "./_helpers.ts";

const FIXTURE = new URL("./fixtures/tick_operator.ts", import.meta.url).pathname;
const env = { NO_COLOR: "1", KUBECONFIG: "/nonexistent" };
// The dedup key is the object and its resourceVersion, so the count does not grow with the
// window; 20 s of reads every 250 ms (about 80 failing conversions) shows it as well as 60 s.
const WINDOW_MS = 20_000;

Deno.test("a conversion that throws refuses the write, and a stored one is logged once", async (t) => {
  await using cp = await startControlPlane();
  const dir = await Deno.makeTempDir({ prefix: "kubeno-conversion-guard-" });
  const kubeconfig = `--kubeconfig=${cp.kubeconfigPath}`;
  const at = (v: string) => `ticks.${v}.guard.kubeno.dev`;
  const apply = async (name: string, object: unknown, ...flags: string[]) => {
    const path = `${dir}/${name}.json`;
    await Deno.writeTextFile(path, JSON.stringify(object));
    return cp.kubectl("apply", "-f", path, ...flags);
  };
  const tick = (name: string, schedule: string) => ({
    apiVersion: "guard.kubeno.dev/v1",
    kind: "Tick",
    metadata: { name, namespace: "default" },
    spec: { schedule },
  });
  const start = () =>
    startExample(FIXTURE, [
      kubeconfig,
      "--namespace=default",
      ...NO_SERVERS,
      "--log-format=json",
    ], env);
  // Ready once the validating webhook refuses (a server dry run stores nothing either way) and the
  // conversion webhook answers.
  const guarded = () =>
    waitFor(async () => {
      const r = await apply("probe", tick("probe", "@yearly"), "--dry-run=server");
      const get = await cp.kubectl("get", at("v2"), "good", "-n", "default");
      return /cannot be stored/.test(r.stderr) && get.code === 0;
    }, { timeoutMs: 60_000, intervalMs: 250, what: "the operator's webhooks to answer" });
  let op: ReturnType<typeof start> | undefined;
  const lines = () => op!.lines(/./);
  const stop = async () => {
    await op!.stop("SIGINT");
    op = undefined;
  };

  try {
    const crdPath = `${dir}/crd.json`;
    await Deno.writeTextFile(crdPath, JSON.stringify(Tick.crd()));
    const crd = await cp.kubectl("apply", "--server-side", "-f", crdPath);
    assert.equal(crd.code, 0, crd.stderr);
    await cp.kubectl("wait", "--for=condition=Established", "crd/ticks.guard.kubeno.dev");

    const good = await apply("good", tick("good", "*/5 * * * *"));
    assert.equal(good.code, 0, good.stderr);
    op = start();
    await guarded();

    await t.step("a create that does not convert to v2 is refused with its message", async () => {
      const r = await apply("hourly", tick("hourly", "@hourly"));
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /Tick "default\/hourly" cannot be stored: it does not convert to guard\.kubeno\.dev\/v2: schedule "@hourly" has 1 fields; v2 holds exactly 5/,
      );
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      const get = await cp.kubectl("get", at("v1"), "hourly", "-n", "default");
      assert.notEqual(get.code, 0, "the refused object was stored");
    });

    await t.step("an update that would not convert is refused too", async () => {
      const r = await apply("good", tick("good", "@daily"));
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /does not convert to guard\.kubeno\.dev\/v2: schedule "@daily"/);
    });

    await t.step("kubectl get works at every version", async () => {
      for (const v of ["v1", "v2"]) {
        const r = await cp.kubectl("get", at(v), "-n", "default", "-o", "name");
        assert.equal(r.code, 0, `${v}: ${r.stderr}`);
        assert.match(r.stdout, /tick\.guard\.kubeno\.dev\/good/);
      }
      const plain = await cp.kubectl("get", "ticks", "-n", "default", "-o", "json");
      assert.equal(plain.code, 0, plain.stderr);
      assert.equal(JSON.parse(plain.stdout).items[0].spec.minute, "*/5", "kubectl picks v2");
    });

    await t.step("an object stored before the rule: logged once per change", async () => {
      // Written while no operator runs (no webhook), as objects stored before this release were.
      await stop();
      const legacy = await apply("legacy", tick("legacy", "@weekly"));
      assert.equal(legacy.code, 0, legacy.stderr);
      op = start();
      await guarded();

      const end = Date.now() + WINDOW_MS;
      let failedReads = 0;
      let message = "";
      while (Date.now() < end) {
        const r = await cp.kubectl("get", at("v2"), "-n", "default");
        if (r.code !== 0) {
          failedReads++;
          message = r.stderr.trim();
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      const about = lines().filter((l) => l.includes("default/legacy"));
      console.log(
        `conversion guard: ${failedReads} failed v2 lists in ${WINDOW_MS / 1000} s; ` +
          `${about.length} operator log line(s) about "default/legacy":\n${about.join("\n")}`,
      );
      assert.ok(failedReads >= 10, `only ${failedReads} failed reads`);
      assert.match(
        message,
        /Cannot convert Tick "default\/legacy" from guard\.kubeno\.dev\/v1 to guard\.kubeno\.dev\/v2: schedule "@weekly" has 1 fields/,
      );
      assert.ok(about.length >= 1 && about.length <= 2, `${about.length} lines:\n${about}`);

      // The other objects: by name at v2, and the whole list at v1.
      const one = await cp.kubectl("get", at("v2"), "good", "-n", "default", "-o", "json");
      assert.equal(one.code, 0, one.stderr);
      assert.equal(JSON.parse(one.stdout).spec.minute, "*/5");
      const v1 = await cp.kubectl("get", at("v1"), "-n", "default", "-o", "name");
      assert.equal(v1.code, 0, v1.stderr);
      assert.equal(v1.stdout.trim().split("\n").length, 2, v1.stdout);
    });
  } finally {
    if (op) await stop().catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
