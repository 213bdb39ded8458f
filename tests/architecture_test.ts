// The layout is part of the design (ARCHITECTURE.md): these checks keep it true. They read the
// static imports of every module under src/ and of the entry points at the root.
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { measure } from "./_code_budgets.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SRC = join(ROOT, "src");

/**
 * Every folder of src/ (relative to it), ranked bottom to top as ARCHITECTURE.md's layers are.
 * A module imports only its own folder and folders of a lower rank; folders that share a rank
 * are peers and import neither each other nor anything above them. The test support
 * (`testing`) ranks at the top so that no shipped module can import it; a test module
 * (`*_test.ts`) is held to its folder's rank but may import `testing` too. A folder missing
 * here fails the test: a new folder must be given its rank.
 */
const RANKS: readonly (readonly string[])[] = [
  ["util"],
  ["core"], // with core/api/<group>, the generated kinds
  ["client/errors", "client/kubeconfig"], // ApiError, ConnectionError; kubeconfig and credentials
  ["client/transport"], // the transport seam and its carriers (HTTP/1.1, fetch, relays)
  ["client", "schema"],
  ["runtime/watch", "runtime/queue"],
  ["runtime/cache"],
  ["runtime/source"],
  ["runtime/controller", "runtime/sharding"], // controller: the declaration (`reconcile()`)
  ["runtime/controller/context"], // the reconcile context a worker hands each reconcile
  ["runtime/controller/pipeline"], // the running controller: sources, write gate, workers
  ["runtime/dependents"],
  ["runtime/manager"],
  ["runtime/cluster"],
  ["metrics", "webhook"],
  ["deploy"],
  ["operator/command"], // what every command is built from: Command, options, the API server wait
  ["operator/run"], // the run command: settings, runnables, start-up, heap sizing, metrics
  ["operator"], // operator(): dispatch and the other commands
  ["testing", "tool"],
];
const TEST_SUPPORT = "testing";
/** The ranking as one line, lowest first: `<` between ranks, `=` between peers. */
const RANKING = RANKS.map((peers) => peers.join(" = ")).join(" < ");

/** Every entry point (deno.json `exports`): a module doc, a runnable example, re-exports. */
const ENTRY_POINTS = [
  "mod.ts",
  "core.ts",
  "schema.ts",
  "schema/builtin.ts",
  "client.ts",
  "runtime.ts",
  "runtime/watch.ts",
  "runtime/cache.ts",
  "runtime/queue.ts",
  "runtime/controller.ts",
  "runtime/dependents.ts",
  "runtime/manager.ts",
  "runtime/cluster.ts",
  "runtime/unstable_sharding.ts",
  "webhook.ts",
  "metrics.ts",
  "operator.ts",
  "testing.ts",
  "cli.ts",
];
/** Entry points that are also programs: `if (import.meta.main)` runs what they re-export. */
const PROGRAMS = ["cli.ts"];

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) yield* walk(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

/** Specifiers of a module's static and dynamic imports and re-exports (not those in docs). */
function importsOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gms)) out.push(m[1]);
  for (const m of text.matchAll(/^import\s+"([^"]+)"/gm)) out.push(m[1]);
  for (const line of text.split("\n")) {
    if (/^\s*(\*|\/\/)/.test(line)) continue;
    for (const m of line.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)) out.push(m[1]);
  }
  return out;
}

interface Module {
  path: string; // relative to the repository root
  imports: string[]; // bare specifiers, or repository-relative paths of local modules
}

const modules: Module[] = [];
for await (const file of walk(SRC)) {
  const text = await Deno.readTextFile(file);
  const imports = importsOf(text).map((s) =>
    s.startsWith(".") ? relative(ROOT, resolve(dirname(file), s)) : s
  );
  modules.push({ path: relative(ROOT, file), imports });
}
const sources = modules.filter((m) => !m.path.endsWith("_test.ts"));

/** The folder of a src/ module, e.g. `runtime/cache`. */
const folderOf = (path: string) => dirname(relative("src", path));

/**
 * The generated built-in kinds (`deno task gen:kinds`) sit in `core/api/<group>/<version>.ts`,
 * a folder per API group as Kubernetes and k8s-openapi lay them out, so no folder grows past
 * the limit as groups are added. They belong to the core layer.
 */
const GENERATED = /^core\/api\/[a-z0-9]+$/;

/** The layer of a src/ folder: the generated API folders are part of core. */
const layerOf = (folder: string) => GENERATED.test(folder) ? "core" : folder;

Deno.test("src/ has a folder per concept, each ranked", () => {
  const counts = new Map<string, number>();
  for (const m of sources) counts.set(folderOf(m.path), (counts.get(folderOf(m.path)) ?? 0) + 1);
  assert.ok(!counts.has("."), "no module sits directly in src/");
  assert.ok(counts.has("core/api/core") && counts.has("core/api/apps"), "generated kinds exist");
  const ranked = RANKS.flat();
  for (const folder of counts.keys()) {
    assert.ok(
      ranked.includes(layerOf(folder)),
      `src/${folder} has no rank: add it to RANKS in tests/architecture_test.ts (${RANKING}) ` +
        "and to the layers of ARCHITECTURE.md",
    );
  }
  const layers = new Set([...counts.keys()].map(layerOf));
  for (const folder of ranked) {
    assert.ok(layers.has(folder), `RANKS names src/${folder}, which is gone`);
  }
});

/** Every folder under src/ (relative to it), also those holding only folders. */
async function foldersOf(dir: string, base = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (!e.isDirectory) continue;
    const rel = base ? `${base}/${e.name}` : e.name;
    out.push(rel, ...await foldersOf(join(dir, e.name), rel));
  }
  return out;
}

/** The first paragraph of a README: the text after its `#` title up to the first blank line. */
function firstParagraph(markdown: string): string {
  const body = markdown.replace(/^#[^\n]*\n/, "").trimStart();
  return body.split(/\n\s*\n/)[0].trim();
}

Deno.test("every folder of src/ says its one concept: a README.md whose first paragraph names it", async () => {
  // The generated API folders (core/api/<group>) carry a module doc in each file instead.
  const missing: string[] = [];
  for (const folder of (await foldersOf(SRC)).sort()) {
    if (GENERATED.test(folder)) continue;
    let text: string;
    try {
      text = await Deno.readTextFile(join(SRC, folder, "README.md"));
    } catch {
      missing.push(`src/${folder} has no README.md: write one paragraph saying its one concept`);
      continue;
    }
    const paragraph = firstParagraph(text);
    if (paragraph.length < 40) {
      missing.push(`src/${folder}/README.md: its first paragraph must say the folder's concept`);
    }
  }
  assert.deepEqual(missing, [], missing.join("\n"));
});

Deno.test("no import cycle between the modules of src/", () => {
  const graph = new Map(
    sources.map((m) => [m.path, m.imports.filter((i) => i.startsWith("src/"))]),
  );
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (p: string) => {
    if (state.get(p) === "done") return;
    if (state.get(p) === "open") {
      assert.fail(`import cycle: ${[...stack.slice(stack.indexOf(p)), p].join(" → ")}`);
    }
    state.set(p, "open");
    stack.push(p);
    for (const next of graph.get(p) ?? []) visit(next);
    stack.pop();
    state.set(p, "done");
  };
  for (const p of graph.keys()) visit(p);
});

Deno.test(`every folder imports only folders ranked below it: ${RANKING}`, () => {
  console.log(
    "Ranks of src/ folders, bottom to top (peers share a rank):\n" +
      RANKS.map((peers, i) => `  ${String(i).padStart(2)}  ${peers.join(", ")}`).join("\n"),
  );
  const rankOf = (folder: string) => RANKS.findIndex((peers) => peers.includes(folder));
  const upward: string[] = [];
  for (const m of modules) {
    const from = layerOf(folderOf(m.path));
    const rank = rankOf(from);
    if (rank < 0) {
      upward.push(`${m.path} sits in src/${from}, which has no rank: add it to RANKS`);
      continue;
    }
    for (const i of m.imports.filter((i) => i.startsWith("src/"))) {
      const to = layerOf(folderOf(i));
      if (to === from || (m.path.endsWith("_test.ts") && to === TEST_SUPPORT)) continue;
      const target = rankOf(to);
      if (target >= 0 && target < rank) continue;
      upward.push(
        `${m.path} (rank ${rank}, ${from}) imports ${i} (rank ${
          target < 0 ? "none" : target
        }, ${to}), ` +
          (target === rank ? "a peer of the same rank" : "which ranks above it"),
      );
    }
  }
  assert.deepEqual(upward, [], `imports against the ranking ${RANKING}:\n${upward.join("\n")}`);
});

Deno.test("a module never imports another folder's private (_) module", () => {
  for (const m of modules) {
    for (const i of m.imports.filter((i) => i.startsWith("src/"))) {
      if (!i.split("/").at(-1)!.startsWith("_")) continue;
      assert.equal(dirname(i), dirname(m.path), `${m.path} imports ${i}`);
    }
  }
});

Deno.test("LogTape is imported only by util/log.ts, zod only by util/zod.ts, OpenTelemetry only by util/trace.ts", () => {
  for (const m of sources) {
    for (const i of m.imports) {
      if (i.includes("logtape")) assert.equal(m.path, "src/util/log.ts", `${m.path} imports ${i}`);
      if (i.includes("opentelemetry")) {
        assert.equal(m.path, "src/util/trace.ts", `${m.path} imports ${i}`);
      }
      if (i === "zod" || i.startsWith("npm:zod")) {
        assert.equal(m.path, "src/util/zod.ts", `${m.path} imports ${i}`);
      }
    }
  }
});

Deno.test("@kubernetes/client-node is never imported statically, by any spelling", async () => {
  // Its one import is built at run time in client/kubeconfig/_auth_provider.ts, so neither a plain run
  // nor `deno bundle`/`deno compile` loads it unless an auth-provider plugin asks for it.
  const roots = [];
  const rootFiles = new Set(ENTRY_POINTS);
  for await (const e of Deno.readDir(ROOT)) {
    if (e.isFile && e.name.endsWith(".ts")) rootFiles.add(e.name);
  }
  for (const path of rootFiles) {
    roots.push({ path, imports: importsOf(await Deno.readTextFile(join(ROOT, path))) });
  }
  for (const m of [...sources, ...roots]) {
    for (const i of m.imports) {
      assert.ok(!i.includes("client-node"), `${m.path} imports ${i}`);
    }
  }
  const lazy = await Deno.readTextFile(join(SRC, "client/kubeconfig/_auth_provider.ts"));
  assert.match(lazy, /await import\(CLIENT_NODE\)/, "the lazy import is where it is said to be");
});

Deno.test("deno.json exports exactly the entry points", async () => {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const targets = Object.values(config.exports as Record<string, string>).map((t) => t.slice(2));
  assert.deepEqual(targets.sort(), [...ENTRY_POINTS].sort());
});

Deno.test("entry points hold docs and explicit re-exports only; mod.ts stays small", async () => {
  for (const entry of ENTRY_POINTS) {
    const text = await Deno.readTextFile(join(ROOT, entry));
    assert.match(
      text,
      /^\/\*\*[\s\S]*?@example[\s\S]*?@module\s*\*\//,
      `${entry}: a module doc with an example`,
    );
    const code = text.replace(/\/\*\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
    const statements = code.split(";").map((s) => s.trim()).filter(Boolean);
    for (const s of statements) {
      // A program's entry may import one name and run it: `if (import.meta.main) ...(await main(...))`.
      if (PROGRAMS.includes(entry)) {
        if (/^import \{ \w+ \} from "[^"]+"$/.test(s)) continue;
        // Exactly that call, so no logic hides in the condition's body.
        if (/^if \(import\.meta\.main\) Deno\.exit\(await \w+\(Deno\.args\)\)$/.test(s)) continue;
      }
      assert.match(s, /^export (type )?\{[^}]*\} from "[^"]+"$/, `${entry}: ${s.slice(0, 80)}`);
      assert.doesNotMatch(s, /\bas\b/, `${entry} renames an export instead of its definition`);
    }
  }
  const root = await Deno.readTextFile(join(ROOT, "mod.ts"));
  const names = [...root.matchAll(/export (?:type )?\{([^}]*)\}/g)]
    .flatMap((m) => m[1].split(",").map((n) => n.trim()).filter(Boolean));
  // 68: the happy path — with dependents and the kinds a web app's dependents are (Ingress),
  // so one import entry suffices for an operator that uses them — and KubenoError, the base
  // of every error it throws.
  assert.ok(names.length <= 68, `mod.ts exports ${names.length} names`);
});

/** The names an entry point exports. */
async function exportsOf(entry: string): Promise<string[]> {
  const text = await Deno.readTextFile(join(ROOT, entry));
  return [...text.matchAll(/export (?:type )?\{([^}]*)\}/g)]
    .flatMap((m) => m[1].split(",").map((n) => n.trim().replace(/^type /, "")).filter(Boolean));
}

Deno.test("the types a user writes beside a function are exported where the function is", async () => {
  // ctx.apply / client.apply take an ApplyObject; setCondition takes a ConditionInput.
  for (
    const [name, entries] of [
      ["ApplyObject", ["mod.ts", "client.ts", "runtime/controller.ts"]],
      ["ConditionInput", ["mod.ts", "core.ts"]],
      ["setCondition", ["mod.ts", "core.ts"]],
    ] as const
  ) {
    for (const entry of entries) {
      assert.ok((await exportsOf(entry)).includes(name), `${entry} does not export ${name}`);
    }
  }
});

Deno.test("deno doc shows setCondition's options as optional", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", "core.ts"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const doc = JSON.parse(new TextDecoder().decode(out.stdout));
  // deno-lint-ignore no-explicit-any
  const symbols: any[] = Object.values(doc.nodes).flatMap((m: any) => m.symbols ?? []);
  const fn = symbols.find((n) => n.name === "setCondition");
  assert.ok(fn, "deno doc lists setCondition");
  // deno-lint-ignore no-explicit-any
  const params = fn.declarations[0].def.params.map((p: any) => [p.name, p.optional]);
  assert.deepEqual(params, [["conditions", false], ["condition", false], ["options", true]]);
});

Deno.test("the controller's stages stay in their budgets: runner.ts ≤ 400 lines, no class over 300 lines or 12 private fields, no function over 80 lines", async () => {
  const { files, classes, functions } = await measure(join(SRC, "runtime/controller"), ROOT);
  const runner = files.find((f) => f.file === "src/runtime/controller/pipeline/runner.ts");
  assert.ok(runner, "src/runtime/controller/pipeline/runner.ts is gone");
  assert.ok(runner.lines <= 400, `runner.ts has ${runner.lines} lines`);
  const over = [
    ...classes.filter((c) => c.lines > 300 || c.privateFields! > 12).map((c) =>
      `class ${c.name} (${c.file}): ${c.lines} lines, ${c.privateFields} private fields`
    ),
    ...functions.filter((f) => f.lines > 80).map((f) =>
      `function ${f.name} (${f.file}): ${f.lines} lines`
    ),
  ];
  assert.deepEqual(over, [], `over budget in src/runtime/controller:\n${over.join("\n")}`);
});
