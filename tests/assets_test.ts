// Where the control plane's binaries come from, as src/testing/assets.ts documents it after
// controller-runtime's envtest: TEST_ASSET_<NAME> first, then $KUBEBUILDER_ASSETS/<name>, then
// kubeno's cache. Here kubeno's cache is an empty folder, KUBEBUILDER_ASSETS holds a wrapper
// per binary and TEST_ASSET_KUBE_APISERVER names another wrapper: each wrapper notes that it
// ran, then runs the real binary. The control plane must start and serve, and the notes must
// show which wrapper ran for which binary. One control plane, in a child process (the lookup
// reads its environment).
import assert from "node:assert/strict";
import { cacheDir } from "../src/testing/assets.ts";

const BINARIES = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"];

Deno.test("TEST_ASSET_<NAME> wins over KUBEBUILDER_ASSETS, which wins over kubeno's cache", async () => {
  const real = cacheDir();
  const dir = await Deno.makeTempDir({ prefix: "kubeno-assets-" });
  try {
    const emptyCache = `${dir}/empty-cache`;
    const kubebuilder = `${dir}/kubebuilder`;
    const explicit = `${dir}/explicit`;
    const notes = `${dir}/notes`;
    for (const d of [emptyCache, kubebuilder, explicit]) await Deno.mkdir(d);
    const wrapper = async (path: string, label: string, binary: string) => {
      await Deno.writeTextFile(
        path,
        `#!/bin/sh\necho "${label} ${binary}" >> '${notes}'\nexec '${real}/${binary}' "$@"\n`,
      );
      await Deno.chmod(path, 0o755);
    };
    for (const b of BINARIES) await wrapper(`${kubebuilder}/${b}`, "KUBEBUILDER_ASSETS", b);
    await wrapper(`${explicit}/apiserver`, "TEST_ASSET_KUBE_APISERVER", "kube-apiserver");

    const script = `
      import { startControlPlane } from ${
      JSON.stringify(new URL("../testing.ts", import.meta.url).href)
    };
      await using cp = await startControlPlane();
      const r = await cp.kubectl("get", "namespace", "default", "-o", "name");
      console.log(r.stdout.trim());
    `;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", script],
      env: {
        KUBENO_ASSETS_DIR: emptyCache,
        KUBEBUILDER_ASSETS: kubebuilder,
        TEST_ASSET_KUBE_APISERVER: `${explicit}/apiserver`,
        // No Go: a miss could not be covered by a build.
        PATH: "/usr/bin:/bin",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.equal(stdout.trim(), "namespace/default");
    const ran = new Set((await Deno.readTextFile(notes)).trim().split("\n"));
    console.log(`wrappers that ran: ${[...ran].sort().join(", ")}`);
    assert.ok(ran.has("TEST_ASSET_KUBE_APISERVER kube-apiserver"), [...ran].join("\n"));
    assert.ok(!ran.has("KUBEBUILDER_ASSETS kube-apiserver"), "TEST_ASSET_ wins");
    // Without workloads the control plane is etcd and the API server (and kubectl above).
    for (const b of ["etcd", "kubectl"]) {
      assert.ok(ran.has(`KUBEBUILDER_ASSETS ${b}`), `${b} from KUBEBUILDER_ASSETS`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
