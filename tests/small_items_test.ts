// The smaller items of issue 34, each checked as a user meets it: `z.infer` with kubeno's `z`;
// the commands in examples/myapp_v1.ts's header exist; `run --help`'s lease example keeps its own
// rule (lease duration > renew deadline); `init` lists the resources/ folder it writes and its
// README names a kind that clashes with a built-in one by its full resource name; `deno doc`
// shows AdmissionDenied's options as optional. (Four-field cron schedules:
// tests/builtin_schemas_test.ts.)
import assert from "node:assert/strict";
import { defineResource, z } from "../mod.ts";
import type { OutputOf } from "../schema.ts";
import { parseGoDuration } from "../src/util/duration.ts";

const REPO = new URL("../", import.meta.url);
const dec = new TextDecoder();
const deno = async (...args: string[]) => {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: REPO.pathname,
    env: { NO_COLOR: "1", KUBECONFIG: "/nonexistent" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
};

Deno.test("z is a namespace too: z.infer, z.input and z.output work", () => {
  const spec = z.object({ image: z.string(), replicas: z.int().default(1) });
  type Spec = z.infer<typeof spec>;
  type In = z.input<typeof spec>;
  const input: In = { image: "nginx" };
  const parsed: Spec = spec.parse(input);
  const same: z.output<typeof spec> = parsed;
  const App = defineResource({ group: "example.com", version: "v1", kind: "App", spec });
  const fromResource: OutputOf<typeof App.specSchema> = same;
  assert.equal(fromResource.replicas, 1);
});

Deno.test("every command in examples/myapp_v1.ts's header is one the program has", async () => {
  const text = await Deno.readTextFile(new URL("examples/myapp_v1.ts", REPO));
  const header = text.slice(0, text.indexOf("@module"));
  const commands = [...header.matchAll(/deno run -A examples\/myapp_v1\.ts +([a-z][a-z-]*)/g)]
    .map((m) => m[1]);
  assert.ok(
    commands.includes("manifests") && commands.includes("migrate-storage"),
    commands.join(),
  );
  assert.doesNotMatch(header, /chart --out/);
  for (const command of new Set(commands)) {
    const r = await deno("run", "-A", "--quiet", "examples/myapp_v1.ts", command, "--help");
    assert.equal(r.code, 0, `${command}: ${r.stderr}`);
  }
  const helm = await deno("run", "-A", "--quiet", "examples/myapp_v1.ts", "manifests", "--help");
  assert.match(helm.stdout, /--helm/);
});

Deno.test("run --help gives lease timings that keep lease duration > renew deadline", async () => {
  const r = await deno(
    "run",
    "-A",
    "--quiet",
    "tests/fixtures/widget_operator.ts",
    "run",
    "--help",
  );
  assert.equal(r.code, 0, r.stderr);
  const help = r.stdout.replace(/\s+/g, " ");
  const renew = help.match(
    /e\.g\. --leader-elect-renew-deadline=(\S+) --leader-elect-lease-duration=(\S+)\)/,
  );
  assert.ok(renew, help);
  assert.ok(parseGoDuration(renew[2])! > parseGoDuration(renew[1])!, renew[0]);
  assert.doesNotMatch(help, /30s\/20s/);
});

Deno.test("init lists resources/, and names a clashing kind by its full resource name", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kubeno-init-" });
  try {
    const r = await deno(
      "run",
      "-A",
      "--quiet",
      "cli.ts",
      "init",
      `${dir}/cron-operator`,
      "--group",
      "batch.example.com",
      "--version",
      "v1",
      "--kind",
      "CronJob",
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ {2}resources\/ /m);
    const stat = await Deno.stat(`${dir}/cron-operator/resources`);
    assert.ok(stat.isDirectory);
    const readme = await Deno.readTextFile(`${dir}/cron-operator/README.md`);
    assert.match(readme, /^kubectl get cronjobs\.batch\.example\.com /m);
    assert.doesNotMatch(readme, /^kubectl get cronjobs$/m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno doc shows AdmissionDenied's options as optional", async () => {
  const r = await deno("doc", "--filter", "AdmissionDenied", "webhook.ts");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /constructor\(message: string, options\?: AdmissionDeniedOptions\)/);
});
