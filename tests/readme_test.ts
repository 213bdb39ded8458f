// The README's code blocks are what the suite runs. Every fenced block is TypeScript, shell
// or output; every TypeScript block type-checks against this checkout (its imports of
// `jsr:@kubeno/kubeno` and its subpaths mapped to the files deno.json exports, the block
// itself unchanged), and the blocks that are programs run: the operator installs, reconciles
// the sample to Running and refuses what its webhook refuses, and the test passes.
import assert from "node:assert/strict";
import { startControlPlane } from "../testing.ts";
import { applyAdmitted, spawnLogged, waitFor } from "./_helpers.ts";
import { assertDefaultPortsFree } from "./_ports.ts";
import { MYAPP_SAMPLE as SAMPLE } from "./_examples.ts";

const REPO = new URL("../", import.meta.url);
const README = new URL("README.md", REPO);
const dec = new TextDecoder();

interface Block {
  lang: string;
  code: string;
  /** 1-based line of the opening fence. */
  line: number;
}

/**
 * The fenced code blocks of a Markdown text.
 *
 * @param md The Markdown.
 * @returns Each block's info string's first word, body and line.
 */
function codeBlocks(md: string): Block[] {
  const lines = md.split("\n");
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^(`{3,})\s*(\S*)/);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.trimEnd() === open[1]);
    assert.ok(end > i, `README.md:${i + 1}: the code block is never closed`);
    out.push({ lang: open[2], code: lines.slice(i + 1, end).join("\n") + "\n", line: i + 1 });
    i = end;
  }
  return out;
}

const blocks = codeBlocks(await Deno.readTextFile(README));
const tsBlocks = blocks.filter((b) => b.lang === "ts");

/**
 * A temporary project whose import map sends `jsr:@kubeno/kubeno` (and each subpath that
 * deno.json exports) to this checkout, with the checkout's own dependencies and lock file,
 * holding each TypeScript block as `readme_<line>.ts`.
 */
async function project(): Promise<{ dir: string; file(b: Block): string } & AsyncDisposable> {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", REPO)));
  const imports: Record<string, string> = { ...config.imports };
  for (const [sub, target] of Object.entries(config.exports as Record<string, string>)) {
    imports[`jsr:${config.name}${sub.slice(1)}`] = new URL(target, REPO).href;
  }
  const dir = await Deno.makeTempDir({ prefix: "kubeno-readme-" });
  await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify({ imports }, null, 2));
  await Deno.copyFile(new URL("deno.lock", REPO), `${dir}/deno.lock`);
  const file = (b: Block) => `${dir}/readme_${b.line}.ts`;
  for (const b of tsBlocks) await Deno.writeTextFile(file(b), b.code);
  return {
    dir,
    file,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
  };
}

async function deno(args: string[], cwd: string, env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("README: every code block is fenced as ts, sh or text", () => {
  assert.ok(blocks.length > 0, "no code blocks found in README.md");
  for (const b of blocks) {
    assert.ok(
      ["ts", "sh", "text"].includes(b.lang),
      `README.md:${b.line}: a block fenced as "${b.lang}"; use ts (checked by this test), sh or text`,
    );
  }
});

Deno.test("README: every TypeScript block type-checks against this checkout", async () => {
  assert.ok(
    tsBlocks.length >= 2,
    `expected the README's TypeScript blocks, found ${tsBlocks.length}`,
  );
  await using p = await project();
  const check = await deno(["check", ...tsBlocks.map(p.file)], p.dir);
  const where = tsBlocks.map((b) => `readme_${b.line}.ts is README.md:${b.line}`).join(", ");
  assert.equal(check.code, 0, `deno check failed (${where}):\n${check.stderr}`);
});

/** The README block that is an operator program, and the one that is a test. */
const operatorBlock = tsBlocks.find((b) => /import\.meta\.main[\s\S]*operator\(/.test(b.code));
const testBlocks = tsBlocks.filter((b) => b.code.includes("Deno.test("));

Deno.test("README: the operator block installs, reconciles the sample to Running, and its webhook refuses 101 replicas", async (t) => {
  assert.ok(operatorBlock, "no README block runs an operator");
  // As a user runs it: `deno run -A <file> install`, then `deno run -A <file> run`, the
  // cluster in KUBECONFIG and no other flag (the default ports: run under the ports lock).
  await assertDefaultPortsFree();
  await using p = await project();
  await using cp = await startControlPlane({ workloads: true });
  const file = p.file(operatorBlock);
  const env = { KUBECONFIG: cp.kubeconfigPath, POD_NAMESPACE: "", WATCH_NAMESPACE: "" };

  const install = await deno(["run", "-A", file, "install"], p.dir, env);
  assert.equal(install.code, 0, install.stderr);

  const operator = spawnLogged(Deno.execPath(), ["run", "-A", file, "run"], {
    cwd: p.dir,
    env: { NO_COLOR: "1", ...env },
  });
  try {
    await t.step("the sample is admitted and reaches Running", async () => {
      await applyAdmitted(cp, SAMPLE, 120_000);
      await waitFor(async () => {
        const r = await cp.kubectl(
          ...["get", "myapp", "myapp-sample", "-o", "jsonpath={.status.phase}"],
        );
        return r.stdout === "Running";
      }, { what: "phase Running", timeoutMs: 180_000, intervalMs: 250 });
      const dep = await cp.kubectl(
        ...["get", "deployment", "myapp-sample", "-o", "jsonpath={.status.readyReplicas}"],
      );
      assert.equal(dep.stdout, "2");
    });
    await t.step("replicas: 101 is refused by the webhook", async () => {
      const r = await cp.kubectl(
        ...["patch", "myapp", "myapp-sample", "--type=merge", "-p", '{"spec":{"replicas":101}}'],
      );
      assert.notEqual(r.code, 0, r.stdout);
      assert.match(r.stderr, /denied the request: spec\.replicas: at most 100/);
    });
    await t.step("SIGTERM: the operator exits 0", async () => {
      const status = await operator.stop("SIGTERM");
      assert.equal(status.code, 0, operator.logs().split("\n").slice(-30).join("\n"));
    });
  } finally {
    await operator.stop("SIGKILL");
  }
});

Deno.test("README: every testing block passes as a test", async (t) => {
  assert.ok(testBlocks.length, "no README block is a Deno.test");
  await using p = await project();
  for (const b of testBlocks) {
    await t.step(`README.md:${b.line}`, async () => {
      // --no-check: "every TypeScript block type-checks" checks these same files with the
      // same deno.json; checking each again here cost seconds per block.
      const run = await deno(["test", "-A", "--no-check", p.file(b)], p.dir);
      assert.equal(run.code, 0, `README.md:${b.line}:\n${run.stdout}\n${run.stderr}`);
      assert.match(run.stdout, /ok \| 1 passed/);
    });
  }
});
