/**
 * `install`: server-side applies the operator's CRDs (and its webhook configurations, when it
 * serves webhooks), waits until every CRD is `Established`, and prints one line per object:
 * `applied`, or `unchanged` when the apply was a no-op (same resourceVersion before and
 * after). Running it again is safe: it converges on the same objects.
 *
 * Every object is first applied as a server-side dry run, so a refusal (403, an invalid
 * object) is reported before anything was written; webhook configurations that a killed local
 * `run` left pointing at itself are restored first (`checkInstall` below).
 *
 * An API server that is unreachable or restarting (refused connections, timeouts, 429, 5xx) is
 * waited out with back-off within `--timeout`, so `install` in a deploy script survives a
 * control-plane upgrade; refusals (401, 403, invalid objects) fail at once.
 *
 * @module
 */
import { realClock } from "../util/clock.ts";
import { isNotFound } from "../client/errors/api_error.ts";
import type { Client } from "../client/client.ts";
import {
  type Command,
  type CommandContext,
  connect,
  objectLabel,
  type OperatorDefinition,
  operatorNamespace,
} from "./command/command.ts";
import { EXIT, parseDuration } from "../util/args.ts";
import {
  CustomResourceDefinition,
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "../core/kinds_cluster.ts";
import { operatorManifests } from "../deploy/manifests.ts";
import { restoreWebhooks } from "../webhook/local_registration.ts";
import type { CommandIo } from "../util/cli_io.ts";
import { restoreConversions, withConversionWebhook } from "../webhook/conversion_config.ts";
import { ApiServerWait } from "./command/api_server_wait.ts";
import type { KubeObject } from "../core/object.ts";
import type { Resource } from "../core/resource.ts";
import type { ClusterConfig, ClusterProvider } from "../runtime/cluster/provider.ts";
import { clusterClient } from "../runtime/cluster/fleet.ts";
import { firstLine } from "../util/cli_io.ts";
import { KubenoError } from "../util/error.ts";

/** The `install` command. */
export const installCommand: Command = {
  name: "install",
  summary: "Apply the CRDs (and webhook configurations) to the cluster",
  description:
    `Server-side applies the operator's CustomResourceDefinitions, and its admission webhook
configurations when it has webhooks, then waits until every CRD is Established. Prints one
line per object: "applied", or "unchanged" when nothing changed. Safe to run again.
Every object is dry-run first: when one would be refused, nothing is written.

An API server that is unreachable or restarting is waited out with back-off, logged once
per change, within --timeout; refused credentials, missing permissions and invalid objects
fail at once.

A fleet operator (operator({ fleet })) installs on every member its provider names (the
cluster of --kubeconfig is the hub), through the kubeconfig of each member's Secret, which
must be allowed to apply CRDs; the CRDs of hubReads kinds go on the hub too. One line per
cluster; a member that fails is one error line and exit 1, the others are still installed.`,
  flags: [
    {
      name: "timeout",
      type: "string",
      valueName: "DURATION",
      default: "60s",
      description:
        "How long to wait for the API server (when unreachable or restarting) and for the CRDs to become Established",
    },
  ],
  async run(ctx: CommandContext): Promise<number> {
    const timeoutMs = parseDuration(String(ctx.flags.timeout ?? "60s"), "timeout");
    if (ctx.def.fleet) return await installFleet(ctx, timeoutMs);
    using client = await connect(ctx);
    const objects = installObjects(ctx.def, operatorNamespace(ctx));
    await installOn(client, ctx, objects, timeoutMs, (line) => ctx.out(line));
    return EXIT.ok;
  },
};

/**
 * Applies `objects` on one cluster, dry-run first, then waits for the CRDs to be Established.
 *
 * @param client The cluster's client.
 * @param ctx The command context (the operator, where to write).
 * @param objects What to apply.
 * @param timeoutMs `--timeout`.
 * @param emit Called with one line per object.
 * @throws What the API server refused, or {@linkcode CrdNotEstablishedError}.
 */
async function installOn(
  client: Client,
  ctx: CommandContext,
  objects: KubeObject[],
  timeoutMs: number,
  emit: (line: string) => void,
): Promise<void> {
  {
    const wait = new ApiServerWait({ timeoutMs, flag: "--timeout", server: client.server });
    const deadline = Date.now() + timeoutMs;
    // Nothing is written unless every object would be accepted.
    await checkInstall(client, ctx.def, objects, resourceOf, ctx, (fn) => wait.run(fn));
    for (const obj of objects) {
      const res = resourceOf(obj);
      // Read before the first apply attempt: an apply retried after a lost answer is still
      // reported "applied".
      const before = await wait.run((signal) =>
        getOrUndefined(client, res, obj.metadata.name!, signal)
      );
      const after = await wait.run((signal) =>
        client.apply(res, obj as never, { force: true, signal })
      );
      const same = before?.metadata.resourceVersion === after.metadata.resourceVersion;
      emit(`${objectLabel(obj)} ${same ? "unchanged" : "applied"}`);
    }
    for (const obj of objects) {
      if (obj.kind === "CustomResourceDefinition") {
        await waitEstablished(client, wait, obj.metadata.name!, deadline, timeoutMs);
      }
    }
  }
}

// `install` of a fleet operator: the cluster of --kubeconfig is the hub. The CRDs go on every
// member the provider names now (read from the hub, e.g. its kubeconfig Secrets), the CRDs of
// `hubReads` kinds on the hub. One line per cluster; a member that cannot be installed is one
// error line and exit 1, the others are still installed (all at once, each within --timeout).
/**
 * Installs a fleet operator's CRDs on its members and the hub.
 *
 * @param ctx The command context; `ctx.def.fleet` is set.
 * @param timeoutMs `--timeout`: for the provider's first list and per cluster.
 * @returns The exit code.
 */
async function installFleet(ctx: CommandContext, timeoutMs: number): Promise<number> {
  const fleet = ctx.def.fleet!;
  using hub = await connect(ctx);
  const all = installObjects(ctx.def, operatorNamespace(ctx));
  const onHub = all.filter((o) =>
    (fleet.hubReads ?? []).some((r) =>
      o.kind === "CustomResourceDefinition" && o.metadata.name === `${r.plural}.${r.group}`
    )
  );
  const members = await providerMembers(fleet.clusters, hub, timeoutMs);
  const targets: { name: string; objects: KubeObject[]; client: () => Promise<Client> }[] = [
    ...(onHub.length ? [{ name: "hub", objects: onHub, client: () => Promise.resolve(hub) }] : []),
    ...[...members].map(([name, config]) => ({
      name,
      objects: all,
      client: () => clusterClient(config, {}),
    })),
  ];
  const results = await Promise.all(targets.map(async (t) => {
    const lines: string[] = [];
    let client: Client | undefined;
    try {
      client = await t.client();
      await installOn(client, ctx, t.objects, timeoutMs, (line) => lines.push(line));
      return { ok: `${t.name}: ${lines.join(", ") || "nothing to install"}` };
    } catch (err) {
      return { error: `Cannot install on cluster "${t.name}": ${firstLine(err)}` };
    } finally {
      if (client && client !== hub) client.close();
    }
  }));
  for (const r of results) {
    if (r.ok) ctx.out(r.ok);
    else ctx.err(`${ctx.def.name}: ${r.error}`);
  }
  if (!members.size) ctx.out(`No member clusters in ${fleet.clusters.name}`);
  return results.some((r) => r.error) ? EXIT.failure : EXIT.ok;
}

/**
 * The clusters a provider names at start: runs it until its `synced` (or `timeoutMs`).
 *
 * @param provider The fleet's provider.
 * @param hub The hub's client.
 * @param timeoutMs How long to wait for its first list.
 * @returns The members by name.
 * @throws {Error} When the provider did not report its first list within `timeoutMs`.
 */
async function providerMembers(
  provider: ClusterProvider,
  hub: Client,
  timeoutMs: number,
): Promise<Map<string, ClusterConfig>> {
  const members = new Map<string, ClusterConfig>();
  const stop = new AbortController();
  const synced = Promise.withResolvers<void>();
  const timer = setTimeout(
    () =>
      synced.reject(
        new Error(
          `Cannot list the member clusters: ${provider.name} did not finish its first list within --timeout=${
            timeoutMs / 1000
          }s`,
        ),
      ),
    timeoutMs,
  );
  const running = provider.run({
    hub,
    signal: stop.signal,
    engage: (name, config) => void members.set(name, config),
    disengage: (name) => void members.delete(name),
    invalid: (name) => void members.delete(name),
    synced: () => synced.resolve(),
  });
  running.catch((err) => synced.reject(err));
  try {
    await synced.promise;
    return new Map(members);
  } finally {
    clearTimeout(timer);
    stop.abort();
    await running.catch(() => {});
  }
}

/**
 * What `install` applies and `uninstall` removes: the CRDs, then webhook configurations.
 *
 * @param def The operator.
 * @param namespace The operator's namespace (where the webhook Service lives).
 * @returns The objects, in apply order.
 */
export function installObjects(def: OperatorDefinition, namespace: string): KubeObject[] {
  // A multi-version CRD's conversion webhook is the operator's, behind its webhook Service.
  const service = { namespace, name: `${def.name}-webhook`, port: 443 };
  const crds = def.installs.map((i) => withConversionWebhook(i.crd, { service }));
  if (!def.webhooks.length) return crds;
  const { webhooks } = operatorManifests({
    name: def.name,
    version: def.version,
    controllers: [],
    crds: [],
    namespace,
    image: def.image,
    webhooks: def.webhooks,
  });
  return [...crds, ...webhooks.filter((o) => o.kind?.endsWith("WebhookConfiguration"))];
}

/**
 * The built-in resource of an object `install` applies.
 *
 * @param obj A CRD or webhook configuration.
 * @returns Its resource.
 * @throws {TypeError} For any other kind.
 */
export function resourceOf(obj: KubeObject): Resource {
  switch (obj.kind) {
    case "CustomResourceDefinition":
      return CustomResourceDefinition;
    case "ValidatingWebhookConfiguration":
      return ValidatingWebhookConfiguration;
    case "MutatingWebhookConfiguration":
      return MutatingWebhookConfiguration;
    default:
      throw new TypeError(`Cannot install kind "${obj.kind}": not a CRD or webhook configuration`);
  }
}

async function getOrUndefined(
  client: Client,
  res: Resource,
  name: string,
  signal: AbortSignal,
): Promise<KubeObject | undefined> {
  try {
    return await client.get(res, name, { signal });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Thrown when a CRD does not become Established in time or its names are rejected. */
export class CrdNotEstablishedError extends KubenoError {
  /**
   * @param name The CRD's name.
   * @param problem What was seen.
   */
  constructor(readonly crdName: string, problem: string) {
    super(`CustomResourceDefinition "${crdName}" is not Established: ${problem}`);
    this.name = "CrdNotEstablishedError";
  }
}

async function waitEstablished(
  client: Client,
  wait: ApiServerWait,
  name: string,
  deadline: number,
  timeoutMs: number,
): Promise<void> {
  for (let delay = 50;; delay = Math.min(delay * 2, 1_000)) {
    const crd = await wait.run((signal) => client.get(CustomResourceDefinition, name, { signal }));
    const conds = crd.status?.conditions ?? [];
    if (conds.some((c) => c.type === "Established" && c.status === "True")) return;
    const names = conds.find((c) => c.type === "NamesAccepted" && c.status === "False");
    if (names) throw new CrdNotEstablishedError(name, `names not accepted: ${names.message}`);
    if (Date.now() + delay > deadline) {
      const why = conds.map((c) => `${c.type}=${c.status}`).join(", ") || "no conditions yet";
      throw new CrdNotEstablishedError(
        name,
        `still not after ${timeoutMs / 1000}s (${why}); retry with a longer --timeout`,
      );
    }
    await realClock.sleep(delay);
  }
}

/**
 * What `install` does before it writes anything: hands back webhook configurations (and CRD
 * conversion webhooks) that a killed local `run` left pointing at itself, then checks every
 * object with a server-side dry run, so that a refusal (403, an invalid object) leaves
 * nothing half-applied.
 *
 * @param client The client.
 * @param def The operator.
 * @param objects What `install` applies, in order.
 * @param resourceOf The resource of each object.
 * @param io Where to report restored configurations.
 * @param run Wraps each request, e.g. to wait out an unreachable API server.
 * @throws {ApiError} The first refusal, before anything was applied.
 */
export async function checkInstall(
  client: Client,
  def: OperatorDefinition,
  objects: readonly KubeObject[],
  resourceOf: (obj: KubeObject) => Resource,
  io: Pick<CommandIo, "out">,
  run: <R>(fn: (signal?: AbortSignal) => Promise<R>) => Promise<R> = (fn) => fn(),
): Promise<void> {
  if (def.webhooks.length) {
    for (const kind of await run(() => restoreWebhooks(client, def.name))) {
      io.out(
        `${kind.toLowerCase()}.admissionregistration.k8s.io/${def.name} restored ` +
          "(a local run had left it pointing at itself)",
      );
    }
  }
  const crdNames = def.conversions.map((r) => `${r.plural}.${r.group}`);
  if (crdNames.length) {
    for (const name of await run(() => restoreConversions(client, crdNames))) {
      io.out(
        `customresourcedefinition.apiextensions.k8s.io/${name} conversion webhook restored ` +
          "(a local run had left it pointing at itself)",
      );
    }
  }
  for (const obj of objects) {
    await run((signal) =>
      client.apply(resourceOf(obj), obj as never, { force: true, dryRun: true, signal })
    );
  }
}
