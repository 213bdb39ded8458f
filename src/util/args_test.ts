import assert from "node:assert/strict";
import {
  formatFlags,
  GLOBAL_FLAGS,
  parseDuration,
  parseFlags,
  parseList,
  splitCommand,
  UsageError,
} from "./args.ts";

const specs = [...GLOBAL_FLAGS, { name: "yes", type: "boolean" as const, description: "" }];

Deno.test("parseFlags: values, =values, switches, -h and --", () => {
  const { flags, positionals } = parseFlags(
    ["--kubeconfig", "/k", "--context=dev", "--yes", "x", "-h", "--", "--not-a-flag"],
    specs,
  );
  assert.deepEqual(flags, { kubeconfig: "/k", context: "dev", yes: true, help: true });
  assert.deepEqual(positionals, ["x", "--not-a-flag"]);
  assert.deepEqual(parseFlags(["--yes=false"], specs).flags, { yes: false });
  assert.deepEqual(parseFlags(["--yes=true"], specs).flags, { yes: true });
  // A switch never takes the next argument as its value, as in Go's flag package.
  assert.deepEqual(parseFlags(["--yes", "false"], specs), {
    flags: { yes: true },
    positionals: ["false"],
  });
});

Deno.test("parseFlags: unknown flags, missing values and bad choices are usage errors", () => {
  assert.throws(
    () => parseFlags(["--nope"], specs),
    (e) => e instanceof UsageError && e.message === 'Unknown flag "--nope"',
  );
  assert.throws(() => parseFlags(["-x"], specs), /Unknown flag "-x"/);
  assert.throws(() => parseFlags(["--kubeconfig"], specs), /Flag "--kubeconfig" needs a value/);
  assert.throws(() => parseFlags(["--yes=maybe"], specs), /takes true or false/);
  assert.throws(
    () => parseFlags(["--log-level", "loud"], specs),
    /Flag "--log-level" takes one of debug, info, warning, error, not "loud"/,
  );
});

Deno.test("splitCommand finds the command after flags and their values", () => {
  const values = new Set(["kubeconfig", "out"]);
  assert.deepEqual(splitCommand(["--kubeconfig", "/k", "install", "--yes"], values), {
    command: "install",
    rest: ["--kubeconfig", "/k", "--yes"],
  });
  assert.deepEqual(splitCommand(["--kubeconfig=/k", "--leader-elect"], values), {
    rest: ["--kubeconfig=/k", "--leader-elect"],
  });
  assert.deepEqual(splitCommand(["--", "run"], values), { rest: ["--", "run"] });
});

Deno.test("parseDuration and parseList", () => {
  assert.equal(parseDuration("90s", "t"), 90_000);
  assert.equal(parseDuration("2m", "t"), 120_000);
  assert.equal(parseDuration("250ms", "t"), 250);
  assert.equal(parseDuration("5", "t"), 5_000);
  assert.equal(parseDuration("1.5s", "t"), 1_500);
  assert.equal(parseDuration("1m30s", "t"), 90_000);
  assert.equal(parseDuration("1h0m0.5s", "t"), 3_600_500);
  assert.throws(() => parseDuration("soon", "timeout"), /Flag "--timeout" takes a duration/);
  assert.throws(() => parseDuration("5x", "t"), /takes a duration/);
  assert.throws(() => parseDuration("s", "t"), /takes a duration/);
  assert.throws(() => parseDuration("", "t"), /takes a duration/);
  assert.deepEqual(parseList(" a, b,,a "), ["a", "b"]);
  assert.deepEqual(parseList(undefined), []);
});

Deno.test("formatFlags aligns descriptions and shows defaults", () => {
  const text = formatFlags([
    { name: "a", type: "boolean", description: "A switch" },
    { name: "long-name", type: "string", valueName: "N", description: "Takes N", default: "3" },
  ]);
  assert.equal(text, "  --a            A switch\n  --long-name N  Takes N (default: 3)");
});
