// The chaos scenario (tests/_chaos.ts) with examples/myapp.ts, as issue 14 asks for it: two
// replicas with leader election and admission webhooks, through the scenario's API server
// restarts, etcd compaction, SIGKILL of the leader and deletions, plus:
//
// - the webhooks are reached as in a cluster: the replicas run in cluster mode
//   (KUBERNETES_SERVICE_HOST set, so no local take-over) and serve a supplied certificate
//   directory (--webhook-cert-path, as cert-manager provides one); the harness plays the
//   Service, a TCP balancer on loopback in front of whichever replicas are up, and points the
//   installed webhook configurations at it;
// - midway the harness rotates the webhook certificate as cert-manager and its CA injector
//   would: a new CA goes into the configurations' caBundle beside the old one, then a new
//   serving certificate into the directory, which every replica reloads;
// - Myapps get Deployments on kwok nodes (one in ten with a pod), so "Running" is real;
// - every twentieth creation is accompanied by an attempt to admit more than 100 replicas
//   (a create and a patch), which must never succeed;
// - the API server writes an audit log; every write of a replica (Myapps, their status and
//   finalizers, Deployments) is placed in the Lease epoch it happened in, to show that two
//   leaders never wrote in the same window.
import { X509Certificate } from "node:crypto";
import type { Client } from "../src/client/client.ts";
import { ApiError } from "../src/client/errors/api_error.ts";
import { Namespace } from "../src/core/kinds.ts";
import { Deployment } from "../src/core/kinds_workloads.ts";
import { createCa, issueCert, type IssuedCert } from "../src/util/x509.ts";
import { patchCaBundle } from "../src/webhook/register.ts";
import {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "../src/core/kinds_cluster.ts";
import { MAX_REPLICAS, Myapp } from "../examples/myapp.ts";
import { installOperator, waitFor } from "./_helpers.ts";
import type { ChaosProfile } from "./_chaos.ts";

const EXAMPLE = new URL("../examples/myapp.ts", import.meta.url).pathname;
const NS = "chaos";
const NAME = "myapp-operator";
const FINALIZER = "apps.kubeno.dev/cleanup";

/** A TCP balancer on loopback in front of the replicas' webhook servers: the Service. */
class Balancer {
  readonly #listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  readonly #targets = new Map<string, number>();
  readonly #conns = new Set<Deno.Conn>();
  readonly #serving: Promise<void>;
  #next = 0;
  readonly port = this.#listener.addr.port;
  /** Connections that found no replica to take them. */
  refused = 0;

  constructor() {
    this.#serving = this.#serve();
  }

  /** Where replica `name` serves now. */
  set(name: string, port: number): void {
    this.#targets.set(name, port);
  }

  /** The replicas' ports. */
  ports(): number[] {
    return [...this.#targets.values()];
  }

  async #serve(): Promise<void> {
    try {
      for await (const down of this.#listener) void this.#handle(down);
    } catch { /* closed */ }
  }

  async #handle(down: Deno.Conn): Promise<void> {
    this.#conns.add(down);
    const ports = [...this.#targets.values()];
    let up: Deno.Conn | undefined;
    for (let i = 0; i < ports.length && !up; i++) {
      const port = ports[(this.#next + i) % ports.length];
      up = await Deno.connect({ hostname: "127.0.0.1", port }).catch(() => undefined);
    }
    this.#next++;
    if (!up) {
      this.refused++;
      this.#close(down);
      return;
    }
    this.#conns.add(up);
    const pipe = (from: Deno.Conn, to: Deno.Conn) =>
      from.readable.pipeTo(to.writable).catch(() => {}).finally(() => {
        this.#close(from);
        this.#close(to);
      });
    await Promise.all([pipe(down, up), pipe(up, down)]);
  }

  #close(c: Deno.Conn): void {
    if (!this.#conns.delete(c)) return;
    try {
      c.close();
    } catch { /* closed */ }
  }

  async close(): Promise<void> {
    this.#listener.close();
    for (const c of [...this.#conns]) this.#close(c);
    await this.#serving;
  }
}

interface AuditEvent {
  stage: string;
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; name?: string; namespace?: string };
  responseStatus?: { code?: number };
  requestObject?: { metadata?: { name?: string }; spec?: { holderIdentity?: string } };
  stageTimestamp: string;
}

/**
 * The myapp profile of the chaos scenario. Its control-plane options point the API server at
 * an audit policy written here, so call it before the control plane starts.
 *
 * @returns The profile.
 */
export function myappProfile(): ChaosProfile {
  const dir = Deno.makeTempDirSync({ prefix: "kubeno-chaos-myapp-" });
  const certDir = `${dir}/certs`;
  Deno.mkdirSync(certDir);
  const auditLog = `${dir}/audit.log`;
  Deno.writeTextFileSync(
    `${dir}/audit-policy.yaml`,
    `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Request
    resources: [{ group: "coordination.k8s.io", resources: ["leases"] }]
    verbs: ["create", "update", "patch"]
  - level: Metadata
    resources:
      - { group: "apps.kubeno.dev" }
      - { group: "apps", resources: ["deployments"] }
    verbs: ["create", "update", "patch", "delete"]
  - level: None
`,
  );
  const balancer = new Balancer();
  let ca: IssuedCert;
  let adminClient: Client | undefined;
  const counts = {
    tooBigAttempts: 0,
    refusedByWebhook: 0,
    refusedUnavailable: 0,
    admittedTooBig: [] as string[],
    webhookUnavailable: 0,
  };

  const writeCerts = async (leaf: IssuedCert, bundle: string) => {
    // Replaced one file at a time, as a Secret volume update is seen: the server adopts a
    // pair only once it is whole.
    for (
      const [file, text] of [["ca.crt", bundle], ["tls.key", leaf.keyPem], [
        "tls.crt",
        leaf.certPem,
      ]]
    ) {
      await Deno.writeTextFile(`${certDir}/${file}.tmp`, text);
      await Deno.rename(`${certDir}/${file}.tmp`, `${certDir}/${file}`);
    }
  };
  const serving = (c: IssuedCert) =>
    issueCert({
      commonName: `${NAME}-webhook`,
      ipAddresses: ["127.0.0.1"],
      dnsNames: ["localhost"],
      server: true,
    }, c);

  const listening = async (port: number) => {
    const c = await Deno.connect({ hostname: "127.0.0.1", port }).catch(() => undefined);
    c?.close();
    return !!c;
  };
  /** Whether the webhook server on `port` presents a certificate signed by `c`. */
  const presents = async (port: number, c: IssuedCert) => {
    try {
      const conn = await Deno.connectTls({ hostname: "127.0.0.1", port, caCerts: [c.certPem] });
      await conn.handshake();
      conn.close();
      return true;
    } catch {
      return false;
    }
  };

  const tooBig = async (admin: Client, name: string) => {
    counts.tooBigAttempts++;
    try {
      await admin.create(Myapp, {
        metadata: { name: `${name}-too-big`, namespace: NS },
        spec: { image: "nginx:1.27", replicas: MAX_REPLICAS + 1 + (counts.tooBigAttempts % 50) },
      } as never);
      counts.admittedTooBig.push(`${name}-too-big`);
    } catch (err) {
      if (err instanceof ApiError && /denied the request/.test(err.message)) {
        counts.refusedByWebhook++;
      } else counts.refusedUnavailable++;
    }
    counts.tooBigAttempts++;
    try {
      await admin.patch(Myapp, name, { spec: { replicas: 150 } }, { namespace: NS });
      counts.admittedTooBig.push(`${name} patched to 150`);
    } catch (err) {
      if (err instanceof ApiError && /denied the request/.test(err.message)) {
        counts.refusedByWebhook++;
      } else counts.refusedUnavailable++;
    }
  };

  return {
    resource: Myapp as never,
    lease: `/apis/coordination.k8s.io/v1/namespaces/default/leases/${NAME}`,
    controlPlane: {
      workloads: true,
      apiServerFlags: [
        `--audit-policy-file=${dir}/audit-policy.yaml`,
        `--audit-log-path=${auditLog}`,
        "--audit-log-maxsize=0",
      ],
    },
    async setup(cp, admin) {
      adminClient = admin;
      await installOperator(EXAMPLE, cp.kubeconfigPath);
      await admin.create(Namespace, { metadata: { name: `${NAME}-system` } });
      ca = await createCa("chaos-webhook-ca-1");
      await writeCerts(await serving(ca), ca.certPem);
      // The harness is the Service: the installed configurations point at its balancer.
      for (const res of [ValidatingWebhookConfiguration, MutatingWebhookConfiguration] as const) {
        const cfg = await admin.get(res, NAME);
        for (const w of cfg.webhooks ?? []) {
          const path = w.clientConfig.service?.path ?? "/";
          w.clientConfig = {
            url: `https://127.0.0.1:${balancer.port}${path}`,
            caBundle: btoa(ca.certPem),
          };
        }
        await admin.replace(res, cfg);
      }
    },
    async replica(name, cp) {
      return {
        kubeconfig: await cp.writeKubeconfig({
          user: `replica-${name}`,
          groups: ["system:masters"],
        }),
        program: {
          entry: EXAMPLE,
          env: {
            // In cluster mode: the configurations are the installed ones, no take-over.
            KUBERNETES_SERVICE_HOST: "10.0.0.1",
            POD_NAMESPACE: `${NAME}-system`,
            WATCH_NAMESPACE: NS,
          },
          args: () => {
            const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
            const port = l.addr.port;
            l.close();
            balancer.set(name, port);
            return [`--webhook-port=${port}`, `--webhook-cert-path=${certDir}`];
          },
        },
      };
    },
    async create(admin, name, i) {
      try {
        await admin.create(Myapp, {
          metadata: { name, namespace: NS },
          spec: { image: "nginx:1.27", replicas: i % 10 === 0 ? 1 : 0 },
        } as never);
      } catch (err) {
        if (err instanceof ApiError && /failed calling webhook/.test(err.message)) {
          counts.webhookUnavailable++;
        }
        throw err;
      }
      if (i % 20 === 0) await tooBig(admin, name).catch(() => {});
    },
    reconciled: (app) => app.metadata.finalizers?.includes(FINALIZER) ?? false,
    async converged(admin, kept, doomed) {
      const apps = (await admin.list(Myapp, { namespace: NS })).items;
      const deps = (await admin.list(Deployment, { namespace: NS })).items;
      const present = new Map(apps.map((a) => [a.metadata.name!, a]));
      const owned = new Map<string, number>();
      let orphans = 0;
      const uids = new Set(apps.map((a) => a.metadata.uid));
      for (const d of deps) {
        const owner = d.metadata.ownerReferences?.find((o) => o.controller);
        if (!owner || !uids.has(owner.uid)) orphans++;
        else owned.set(owner.uid, (owned.get(owner.uid) ?? 0) + 1);
      }
      const lingering = doomed.filter((n) => present.has(n));
      const missing = kept.filter((n) => !present.has(n));
      const notRunning = kept.filter((n) => {
        const a = present.get(n);
        return a && (a.status?.phase !== "Running" ||
          a.status?.observedGeneration !== a.metadata.generation);
      });
      const notOne = kept.filter((n) => {
        const a = present.get(n);
        return a && owned.get(a.metadata.uid!) !== 1;
      });
      const parts = [
        notRunning.length && `${notRunning.length} not Running`,
        notOne.length && `${notOne.length} without exactly one Deployment`,
        orphans && `${orphans} Deployments without a live owner`,
        lingering.length && `${lingering.length} deleted still present`,
        missing.length && `${missing.length} missing`,
      ].filter(Boolean);
      return parts.join(", ");
    },
    finalized: (l) =>
      typeof l.json?.msg === "string" && l.json.msg.startsWith("Cleaned up ")
        ? l.json.key as string
        : undefined,
    async midway(say) {
      // Rotate as cert-manager and its CA injector do: trust the new CA beside the old one,
      // then serve a certificate it signed; every replica reloads the directory.
      const started = Date.now();
      const next = await createCa("chaos-webhook-ca-2");
      const bundle = next.certPem + ca.certPem;
      await patchCaBundle(adminClient!, NAME, bundle);
      await writeCerts(await serving(next), bundle);
      await waitFor(async () => {
        for (const port of balancer.ports()) {
          if (await listening(port) && !(await presents(port, next))) return false;
        }
        return true;
      }, { timeoutMs: 60_000, what: "every running replica to serve the rotated certificate" });
      const fingerprint = new X509Certificate(next.certPem).fingerprint256.slice(0, 17);
      ca = next;
      say(
        `webhook certificate rotated to a new CA (${fingerprint}...): served by every running replica ${
          Date.now() - started
        } ms after the bundle was published`,
      );
    },
    async finish({ admin, kept, measure, problems }) {
      // No Myapp with more than 100 replicas was ever admitted.
      const apps = (await admin.list(Myapp, { namespace: NS })).items;
      const over = apps.filter((a) => a.spec.replicas > MAX_REPLICAS).map((a) => a.metadata.name);
      for (const a of [...counts.admittedTooBig, ...over]) {
        problems.push(`admitted more than ${MAX_REPLICAS} replicas: ${a}`);
      }
      // Refusals while the webhook was away prove nothing about the limit: some must be its own.
      if (!counts.refusedByWebhook) {
        problems.push(`no replicas > ${MAX_REPLICAS} attempt was denied by the webhook itself`);
      }
      measure(
        `replicas > ${MAX_REPLICAS}: ${counts.tooBigAttempts} attempts (create and patch), ${counts.refusedByWebhook} denied by the webhook, ${counts.refusedUnavailable} refused while the webhook or the API server was away (failurePolicy Fail, or no API server), ${counts.admittedTooBig.length} admitted; ${over.length} stored`,
      );
      // Exactly one Deployment per Myapp, owned by it.
      const deps = (await admin.list(Deployment, { namespace: NS })).items;
      const byOwner = new Map<string, number>();
      for (const d of deps) {
        const uid = d.metadata.ownerReferences?.find((o) => o.controller)?.uid ?? "";
        byOwner.set(uid, (byOwner.get(uid) ?? 0) + 1);
      }
      const one = apps.filter((a) => byOwner.get(a.metadata.uid!) === 1).length;
      measure(
        `Deployments: ${deps.length} for ${apps.length} Myapps; ${one} Myapps with exactly one (of ${kept.length} kept)`,
      );
      measure(
        `webhook answers missing during creation (retried): ${counts.webhookUnavailable}; balancer connections with no replica up: ${balancer.refused}`,
      );
      const leaders = await auditLeaders(auditLog);
      measure(
        `leader epochs: ${leaders.epochs} (${
          leaders.holders.join(" -> ")
        }); ${leaders.writes} writes by replicas, ${leaders.inFlight} by a previous leader before the next one's first write, ${leaders.overlapping} by a non-leader after the leader wrote`,
      );
      if (leaders.overlapping) {
        problems.push(`two leaders wrote in the same window: ${leaders.examples.join("; ")}`);
      }
      // The leader was SIGKILLed, so the audit log must show writes in two epochs at least;
      // fewer means the check above saw nothing to compare.
      if (!leaders.writes || leaders.epochs < 2) {
        problems.push(
          `the audit log shows ${leaders.writes} replica writes in ${leaders.epochs} leader epochs (expected writes in 2 or more)`,
        );
      }
    },
    async close() {
      await balancer.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * Places every successful write of a replica (by its user, `replica-<name>`) in the Lease
 * epoch it happened in. An epoch starts when a replica takes the Lease (or releases it);
 * renewals continue it. A write by another replica than the holder is allowed only before the
 * holder's first write in that epoch (a previous leader's in-flight write: leader election has
 * no fencing); after it, it is an overlap.
 */
async function auditLeaders(path: string) {
  const events = (await Deno.readTextFile(path)).split("\n").filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent)
    .filter((e) =>
      e.stage === "ResponseComplete" && e.user.username.startsWith("replica-") &&
      (e.responseStatus?.code ?? 0) < 300
    )
    .sort((a, b) => a.stageTimestamp.localeCompare(b.stageTimestamp));
  let holder: string | undefined;
  let holderWrote = false;
  const holders: string[] = [];
  let epochs = 0;
  let writes = 0;
  let inFlight = 0;
  let overlapping = 0;
  const examples: string[] = [];
  for (const e of events) {
    const res = e.objectRef?.resource;
    if (res === "leases") {
      // A create names the object in its body only.
      const lease = e.objectRef?.name || e.requestObject?.metadata?.name;
      if (lease !== NAME || !["create", "update", "patch"].includes(e.verb)) continue;
      const next = e.requestObject?.spec?.holderIdentity ? e.user.username : "";
      if (next !== holder) {
        holder = next;
        holderWrote = false;
        epochs++;
        holders.push(next || "(released)");
      }
      continue;
    }
    if (res !== "myapps" && res !== "deployments") continue;
    writes++;
    if (e.user.username === holder) holderWrote = true;
    else if (!holderWrote) inFlight++;
    else {
      overlapping++;
      if (examples.length < 3) {
        examples.push(
          `${e.user.username} ${e.verb} ${res}/${e.objectRef?.name} at ${e.stageTimestamp} while ${holder} led`,
        );
      }
    }
  }
  return { epochs, holders, writes, inFlight, overlapping, examples };
}
