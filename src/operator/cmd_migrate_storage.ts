/**
 * `migrate-storage`: finishes an API version change, as kube-storage-version-migrator does.
 * For each of the operator's CRDs whose `status.storedVersions` names more than the storage
 * version, every object is read at the storage version and written back unchanged (an
 * update guarded by its resourceVersion), which makes the API server store it at the storage
 * version; then `status.storedVersions` is trimmed to the storage version, so that the old
 * versions can later be dropped from the CRD.
 *
 * Guarantees: `storedVersions` is trimmed only after every object was rewritten; an object
 * changed meanwhile is read again and rewritten (409), one deleted meanwhile is skipped
 * (404), a continue token that expires restarts the listing. Running it again is safe: a CRD
 * already stored at one version is left alone.
 *
 * Assumptions: reading objects stored at another version needs the CRD's conversion
 * webhook, and writes go through the operator's admission webhooks, as every update does:
 * the operator must be running (in the cluster, or `run` outside). When it is not, the
 * command fails naming the webhook that did not answer, and `storedVersions` is untouched.
 *
 * @module
 */
import { isConflict, isGone, isNotFound } from "../client/errors/api_error.ts";
import type { Client } from "../client/client.ts";
import { CustomResourceDefinition } from "../core/kinds_cluster.ts";
import type { KubeObject } from "../core/object.ts";
import { resource } from "../core/resource.ts";
import { EXIT, UsageError } from "../util/args.ts";
import {
  type Command,
  type CommandContext,
  connect,
  type InstalledResource,
} from "./command/command.ts";
import { KubenoError } from "../util/error.ts";

/** Thrown when a CRD cannot be migrated; the message names the CRD and what to do. */
export class StorageMigrationError extends KubenoError {
  /** `"StorageMigrationError"`. */
  override name = "StorageMigrationError";
}

/** The `migrate-storage` command. */
export const migrateStorageCommand: Command = {
  name: "migrate-storage",
  summary: "Rewrite stored objects at the storage version, then trim status.storedVersions",
  description:
    `After an API version change (a CRD that now stores another version), rewrites every object of
the operator's CRDs at the storage version — each read and written back unchanged — and then
sets status.storedVersions to the storage version alone, so that old versions can be removed
from the CRD later. CRDs already stored at one version are left alone: safe to run again.

Objects stored at another version are read through the CRD's conversion webhook, which the
operator serves: run it first (in the cluster, or "run" outside).`,
  flags: [
    {
      name: "page-size",
      type: "string",
      valueName: "N",
      default: "500",
      description: "Objects listed per request",
    },
  ],
  async run(ctx: CommandContext): Promise<number> {
    const limit = Number(ctx.flags["page-size"] ?? "500");
    if (!Number.isInteger(limit) || limit < 1) {
      throw new UsageError(
        `Flag "--page-size" takes a positive integer, not "${ctx.flags["page-size"]}"`,
      );
    }
    using client = await connect(ctx);
    for (const install of ctx.def.installs) {
      ctx.out(await migrate(client, install, limit));
    }
    return EXIT.ok;
  },
};

/** Migrates one CRD; returns the line to print. */
async function migrate(client: Client, install: InstalledResource, limit: number): Promise<string> {
  const name = install.crd.metadata.name;
  const label = `customresourcedefinition.apiextensions.k8s.io/${name}`;
  let crd: CustomResourceDefinition;
  try {
    crd = await client.get(CustomResourceDefinition, name);
  } catch (err) {
    if (isNotFound(err)) {
      throw new StorageMigrationError(
        `Cannot migrate ${name}: the CRD is not installed; run "install" first`,
        { cause: err },
      );
    }
    throw err;
  }
  const storage = crd.spec.versions.find((v) => v.storage)?.name;
  if (!storage) throw new StorageMigrationError(`Cannot migrate ${name}: no version is stored`);
  const before = crd.status?.storedVersions ?? [];
  if (before.length <= 1 && (before[0] ?? storage) === storage) {
    return `${label} stored at ${storage} only: nothing to migrate`;
  }
  const res = resource<KubeObject>({
    group: crd.spec.group,
    version: storage,
    kind: crd.spec.names.kind,
    plural: crd.spec.names.plural,
    namespaced: crd.spec.scope === "Namespaced",
  });
  const rewritten = await rewriteAll(client, res, name, storage, limit);
  await trimStoredVersions(client, name, storage);
  return `${label} ${rewritten} objects rewritten at ${storage}; status.storedVersions ` +
    `[${before.join(", ")}] -> [${storage}]`;
}

/** Reads every object at the storage version and writes it back; returns how many. */
async function rewriteAll(
  client: Client,
  res: ReturnType<typeof resource<KubeObject>>,
  crdName: string,
  storage: string,
  limit: number,
): Promise<number> {
  for (;;) {
    let count = 0;
    try {
      for await (const page of client.listPages(res, { limit })) {
        for (const obj of page.items) {
          if (await rewrite(client, res, obj)) count++;
        }
      }
      return count;
    } catch (err) {
      if (isGone(err)) continue; // the continue token expired: list again from the start
      const broken = unconvertible(err);
      if (broken.length) {
        throw new StorageMigrationError(
          `Cannot migrate ${crdName} to ${storage}: ${
            broken.join(", ")
          } does not convert (the conversion says: ${
            conversionMessage(err)
          }); fix or delete it, then run "migrate-storage" again`,
          { cause: err },
        );
      }
      if (
        err instanceof Error && /conversion webhook for |failed calling webhook/.test(err.message)
      ) {
        // Reads of objects stored at another version need the conversion webhook, writes the
        // admission webhooks: the operator serves both.
        throw new StorageMigrationError(
          `Cannot migrate ${crdName} to ${storage}: ${err.message}; the operator serves the ` +
            `conversion and admission webhooks this needs: start it ("run", or its ` +
            `Deployment) and retry`,
          { cause: err },
        );
      }
      throw err;
    }
  }
}

/**
 * The objects a conversion webhook named as not converting (kubeno's conversion messages read
 * `Cannot convert <Kind> "<namespace>/<name>" ...`), as `<Kind> "<ref>"`.
 */
function unconvertible(err: unknown): string[] {
  if (!(err instanceof Error) || !/conversion webhook for /.test(err.message)) return [];
  const names = [...err.message.matchAll(/Cannot convert (\S+) "([^"]+)"/g)].map((m) =>
    `${m[1]} "${m[2]}"`
  );
  return [...new Set(names)];
}

/** The conversion's own words, after the API server's prefix. */
function conversionMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const at = text.indexOf("Cannot convert ");
  return (at >= 0 ? text.slice(at) : text).split("\n")[0];
}

/** Writes one object back unchanged; false when it was deleted meanwhile. */
async function rewrite(
  client: Client,
  res: ReturnType<typeof resource<KubeObject>>,
  obj: KubeObject,
): Promise<boolean> {
  const { name, namespace } = obj.metadata;
  for (let attempt = 0;; attempt++) {
    try {
      await client.replace(res, obj);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err) || attempt >= 10) throw err;
    }
    try {
      obj = await client.get(res, name!, { namespace });
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

/** Sets `status.storedVersions` to the storage version alone, retrying conflicts. */
async function trimStoredVersions(client: Client, name: string, storage: string): Promise<void> {
  for (let attempt = 0;; attempt++) {
    const crd = await client.get(CustomResourceDefinition, name);
    const now = crd.spec.versions.find((v) => v.storage)?.name;
    if (now !== storage) {
      throw new StorageMigrationError(
        `Cannot trim the stored versions of ${name}: its storage version changed from ` +
          `${storage} to ${now} during the migration; run "migrate-storage" again`,
      );
    }
    crd.status = { ...crd.status, storedVersions: [storage] };
    try {
      await client.replaceStatus(CustomResourceDefinition, crd);
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= 10) throw err;
    }
  }
}
