// Sizes of the code in a folder, read with the TypeScript compiler's parser: each class's
// lines and `#private` fields, each function's lines (declarations, methods, constructors,
// accessors, function expressions and arrow functions alike). The architecture test holds
// src/runtime/controller to its budgets with it; run it on its own to see the figures:
//
//   deno run -A tests/_code_budgets.ts src/runtime/controller
// A test-only dependency, pinned here rather than in deno.json (which publishing would carry).
// deno-lint-ignore no-import-prefix
import ts from "npm:typescript@5.9.3";
import { join, relative } from "node:path";

/** One measured class or function. */
export interface Measured {
  readonly file: string;
  readonly name: string;
  readonly lines: number;
  /** For a class: its `#private` fields (not methods). */
  readonly privateFields?: number;
}

/** What {@linkcode measure} found in a folder. */
export interface Sizes {
  readonly files: { file: string; lines: number }[];
  readonly classes: Measured[];
  readonly functions: Measured[];
}

async function* sourcesOf(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) yield* sourcesOf(p);
    else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) yield p;
  }
}

/**
 * Measures every shipped module (not `*_test.ts`) under `dir`.
 *
 * @param dir The folder.
 * @param root Paths are reported relative to it.
 * @returns Files, classes and functions with their sizes.
 */
export async function measure(dir: string, root = Deno.cwd()): Promise<Sizes> {
  const sizes: Sizes = { files: [], classes: [], functions: [] };
  for await (const path of sourcesOf(dir)) {
    const text = await Deno.readTextFile(path);
    const file = relative(root, path);
    const src = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const lineOf = (pos: number) => src.getLineAndCharacterOfPosition(pos).line;
    const span = (n: ts.Node) => lineOf(n.getEnd()) - lineOf(n.getStart(src)) + 1;
    sizes.files.push({ file, lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0) });
    const visit = (node: ts.Node, owner: string) => {
      if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
        const name = node.name?.text ?? "(class)";
        const privateFields = node.members.filter((m) =>
          ts.isPropertyDeclaration(m) && m.name !== undefined && ts.isPrivateIdentifier(m.name)
        ).length;
        sizes.classes.push({ file, name, lines: span(node), privateFields });
        node.forEachChild((c) =>
          visit(c, name)
        );
        return;
      }
      if (ts.isFunctionLike(node) && "body" in node && node.body) {
        const own = (node as ts.FunctionLikeDeclaration).name;
        const name = ts.isConstructorDeclaration(node)
          ? `${owner}.constructor`
          : own && (ts.isIdentifier(own) || ts.isPrivateIdentifier(own))
          ? (owner ? `${owner}.${own.text}` : own.text)
          : `${owner || "(module)"}:(function at line ${lineOf(node.getStart(src)) + 1})`;
        sizes.functions.push({ file, name, lines: span(node) });
      }
      node.forEachChild((c) => visit(c, owner));
    };
    visit(src, "");
  }
  return sizes;
}

if (import.meta.main) {
  const dir = Deno.args[0] ?? "src/runtime/controller";
  const { files, classes, functions } = await measure(dir);
  const top = <T extends { lines: number }>(xs: T[], n: number) =>
    [...xs].sort((a, b) => b.lines - a.lines).slice(0, n);
  console.log(`${dir}: ${files.length} modules, ${files.reduce((s, f) => s + f.lines, 0)} lines`);
  for (const f of top(files, 5)) {
    console.log(`  file      ${String(f.lines).padStart(5)}  ${f.file}`);
  }
  for (const c of top(classes, 5)) {
    console.log(
      `  class     ${
        String(c.lines).padStart(5)
      }  ${c.file} ${c.name} (${c.privateFields} private fields)`,
    );
  }
  for (const f of top(functions, 5)) {
    console.log(`  function  ${String(f.lines).padStart(5)}  ${f.file} ${f.name}`);
  }
}
