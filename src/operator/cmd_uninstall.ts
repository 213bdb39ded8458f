/**
 * `uninstall`: deletes what `install` applied — webhook configurations first, then the CRDs —
 * and waits until the CRDs are gone. Deleting a CRD deletes every object of its kind, so when
 * any exist it refuses (exit 2) unless `--yes` is given, and with `--yes` it warns per CRD.
 *
 * @module
 */
import { realClock } from "../util/clock.ts";
import { ApiError, isNotFound } from "../client/errors/api_error.ts";
import type { Client } from "../client/client.ts";
import {
  type Command,
  type CommandContext,
  connect,
  objectLabel,
  operatorNamespace,
} from "./command/command.ts";
import { EXIT, parseDuration } from "../util/args.ts";
import { installObjects, resourceOf } from "./cmd_install.ts";
import { CustomResourceDefinition } from "../core/kinds_cluster.ts";
import type { Resource } from "../core/resource.ts";
import { KubenoError } from "../util/error.ts";

/** The `uninstall` command. */
export const uninstallCommand: Command = {
  name: "uninstall",
  summary: "Delete the CRDs (and webhook configurations) from the cluster",
  description: `Deletes what "install" applied: webhook configurations, then the CRDs, and waits
until the CRDs are gone. Deleting a CRD deletes every object of its kind: while any exist it
refuses unless --yes is given.`,
  flags: [
    {
      name: "yes",
      type: "boolean",
      description: "Delete the CRDs even when objects of them exist",
    },
    {
      name: "timeout",
      type: "string",
      valueName: "DURATION",
      default: "60s",
      description: "How long to wait for the CRDs to be gone",
    },
  ],
  async run(ctx: CommandContext): Promise<number> {
    const timeoutMs = parseDuration(String(ctx.flags.timeout ?? "60s"), "timeout");
    using client = await connect(ctx);
    const objects = installObjects(ctx.def, operatorNamespace(ctx));
    const kinds = new Map(ctx.def.installs.map((i) => [i.crd.metadata.name, i.resource]));

    const populated: string[] = [];
    const counts = new Map<string, string>();
    for (const [crdName, res] of kinds) {
      const n = await countObjects(client, res);
      if (n) {
        populated.push(`${n} ${crdName}`);
        counts.set(crdName, n);
      }
    }
    if (populated.length && ctx.flags.yes !== true) {
      ctx.err(
        `${ctx.def.name}: Refusing to uninstall: deleting a CRD deletes all its objects and ` +
          `${populated.join(", ")} exist; pass --yes to delete them`,
      );
      return EXIT.usage;
    }

    // Webhook configurations first, so that they cannot block the deletions that follow.
    const ordered = [...objects].sort((a, b) =>
      Number(a.kind === "CustomResourceDefinition") - Number(b.kind === "CustomResourceDefinition")
    );
    const deleted: string[] = [];
    for (const obj of ordered) {
      const name = obj.metadata.name!;
      const n = counts.get(name);
      if (n) ctx.err(`Warning: deleting ${objectLabel(obj)} deletes its ${n} objects`);
      try {
        await client.delete(resourceOf(obj), name);
        if (obj.kind === "CustomResourceDefinition") deleted.push(name);
        ctx.out(`${objectLabel(obj)} deleted`);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        ctx.out(`${objectLabel(obj)} not found`);
      }
    }
    await waitGone(client, deleted, Date.now() + timeoutMs, timeoutMs);
    return EXIT.ok;
  },
};

/** How many objects of a kind exist, as text (`3`, `500+`), or undefined for none. */
async function countObjects(client: Client, res: Resource): Promise<string | undefined> {
  try {
    const page = await client.list(res, { limit: 1 });
    if (!page.items.length) return undefined;
    const rest = page.metadata.remainingItemCount;
    if (rest !== undefined) return String(1 + rest);
    return page.metadata.continue ? "more than 1" : "1";
  } catch (err) {
    // Not installed (or not served yet): nothing to lose.
    if (err instanceof ApiError && (err.resourceUnknown || isNotFound(err))) return undefined;
    throw err;
  }
}

/** Thrown when a CRD is still there after the deadline, e.g. held by objects' finalizers. */
export class CrdNotDeletedError extends KubenoError {
  /**
   * @param crdName The CRD's name.
   * @param timeoutMs How long was waited.
   */
  constructor(readonly crdName: string, timeoutMs: number) {
    super(
      `CustomResourceDefinition "${crdName}" is still terminating after ${timeoutMs / 1000}s: ` +
        `objects with finalizers remain; run the operator so it can finalize them, or retry ` +
        `with a longer --timeout`,
    );
    this.name = "CrdNotDeletedError";
  }
}

async function waitGone(
  client: Client,
  names: string[],
  deadline: number,
  timeoutMs: number,
): Promise<void> {
  for (const name of names) {
    for (let delay = 50;; delay = Math.min(delay * 2, 1_000)) {
      try {
        await client.get(CustomResourceDefinition, name);
      } catch (err) {
        if (isNotFound(err)) break;
        throw err;
      }
      if (Date.now() + delay > deadline) throw new CrdNotDeletedError(name, timeoutMs);
      await realClock.sleep(delay);
    }
  }
}
