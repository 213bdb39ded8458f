// `deno task compile`: the Myapp example as one binary that carries its CRD and installs it.
// deno compile downloads its runtime (denort); where that is impossible and DENORT_BIN is not
// set, this test is reported as skipped with that reason, never as passed.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { COMPILE_SKIP_REASON, denortAvailable } from "./_helpers.ts";

const canCompile = await denortAvailable();
const ROOT = new URL("..", import.meta.url).pathname;

Deno.test({
  name: `deno task compile: ./myapp-operator carries its CRD and installs it${
    canCompile ? "" : ` ${COMPILE_SKIP_REASON}`
  }`,
  ignore: !canCompile,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const bin = `${dir}/myapp-operator`;
      // The same command as `deno task compile`, with the output in a temp folder.
      const compile = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--quiet",
          `${ROOT}cli.ts`,
          "compile",
          `${ROOT}examples/myapp.ts`,
          "-o",
          bin,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(compile.code, 0, new TextDecoder().decode(compile.stderr));
      await using cp = await startControlPlane();
      const run = async (...args: string[]) => {
        const out = await new Deno.Command(bin, {
          args,
          cwd: dir,
          env: { KUBECONFIG: cp.kubeconfigPath },
          stdout: "piped",
          stderr: "piped",
        }).output();
        return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
      };
      assert.equal((await run("version")).stdout.trim(), "0.1.0");
      const manifests = await run("manifests");
      assert.match(manifests.stdout, /name: myapps\.apps\.kubeno\.dev/);
      const install = await run("install");
      assert.equal(install.code, 0);
      assert.match(install.stdout, /myapps\.apps\.kubeno\.dev (applied|unchanged)/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
