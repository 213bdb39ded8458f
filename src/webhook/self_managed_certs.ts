/**
 * Self-managed webhook certificates: the operator makes its own CA and serving certificate,
 * keeps them in a Secret so replicas agree, puts the CA into its webhook configurations'
 * `caBundle`, and renews both before they expire.
 *
 * Flow: at start, the Secret `<name>-webhook-certs` is read, or created (the first replica
 * to create it wins; the others read what it wrote). When its certificate is unusable or
 * past its renewal point (2/3 of its lifetime) a replica renews: a new CA and serving
 * certificate go into the Secret (an update guarded by resourceVersion, so one replica
 * wins), the CA bundle becomes `new CA + old CA`, and `caBundle` is patched. Each replica
 * switches to the new certificate only after `caPropagationMs`, giving the API server time to
 * trust the new CA; until then the old certificate, still trusted through the bundle, keeps
 * serving. Timers run on the injected {@linkcode Clock}.
 *
 * With `store: "memory"` (runs outside the cluster) there is no Secret: the process issues
 * its own CA and certificate, publishes the bundle through `publish` and renews them the
 * same way.
 *
 * Caveats: a replica starting inside that propagation window serves the new certificate
 * at once. Renewal needs the API server; when it is down the replica retries with backoff.
 *
 * @module
 */
import { X509Certificate } from "node:crypto";
import { getLogger } from "../util/log.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../client/errors/api_error.ts";
import type { Client } from "../client/client.ts";
import { type Clock, realClock, type TimerId } from "../util/clock.ts";
import { Secret } from "../core/kinds.ts";
import { createCa, issueCert } from "../util/x509.ts";
import { checkCertificate } from "./server.ts";
import { patchCaBundle } from "./register.ts";
import { KubenoError } from "../util/error.ts";

const log = getLogger(["kubeno", "webhook"]);
const RENEW_AT = "kubeno.dev/renew-at";
const SERVE_AFTER = "kubeno.dev/serve-after";
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A serving certificate with the CAs clients should trust. */
export interface WebhookCertificate {
  /** The serving certificate, PEM. */
  certPem: string;
  /** Its private key, PEM. */
  keyPem: string;
  /** The CA bundle to publish as `caBundle`: the current CA and, during a renewal, the old one. */
  caBundlePem: string;
  /** When the certificate expires. */
  notAfter: Date;
}

/** Something that provides the webhook server's certificate and tells when it changes. */
export interface CertificateSource {
  /** The certificate to serve now. */
  readonly current: WebhookCertificate;
  /**
   * Calls `listener` with each new certificate to serve.
   * @param listener Receives the new certificate.
   * @returns A function that removes the listener.
   */
  onChange(listener: (cert: WebhookCertificate) => void): () => void;
}

/** Options of {@linkcode selfManagedCertificates}. */
export interface SelfManagedCertificatesOptions {
  /** The operator's name: names the Secret and, by default, the webhook configurations. */
  name: string;
  /** Namespace of the Secret (the operator's). */
  namespace: string;
  /**
   * Service in front of the webhook server; its DNS names go into the certificate.
   * @default `<name>-webhook`
   */
  serviceName?: string;
  /**
   * Secret holding the certificates.
   * @default `<name>-webhook-certs`
   */
  secretName?: string;
  /**
   * Configurations whose `caBundle` is kept current; `[]` to patch none.
   * @default [name]
   */
  configurations?: string[];
  /**
   * Extra names and IP addresses for the certificate.
   * @default ["localhost", "127.0.0.1"]
   */
  hosts?: string[];
  /**
   * Lifetime of the CA and the serving certificate.
   * @default 365 days
   */
  validForMs?: number;
  /**
   * Share of the lifetime after which the certificate is renewed.
   * @default 2/3
   */
  renewAt?: number;
  /**
   * Time between publishing a new CA and serving a certificate signed by it; capped at half
   * of the old certificate's remaining lifetime.
   * @default 10000
   */
  caPropagationMs?: number;
  /**
   * Where the CA and certificate are kept: `secret` (the Secret `secretName` in `namespace`,
   * shared by replicas) or `memory` (this process only, as envtest does; for runs outside
   * the cluster, where the operator's namespace may not exist).
   * @default "secret"
   */
  store?: "secret" | "memory";
  /**
   * Publishes a new CA bundle to the API server before the certificate it signs is served.
   * @default patches `caBundle` of the configurations named in `configurations`
   */
  publish?: (caBundlePem: string) => Promise<void>;
  /** The clock for timers and certificate validity. @default realClock */
  clock?: Clock;
  /** Stops renewal when aborted. */
  signal?: AbortSignal;
}

interface Stored extends WebhookCertificate {
  renewAt: number;
  serveAfter: number;
  caPem: string;
}

/** Self-managed certificates, as {@linkcode selfManagedCertificates} returns them. */
export class SelfManagedCertificates implements CertificateSource, AsyncDisposable {
  #client: Client;
  #opts: Required<Omit<SelfManagedCertificatesOptions, "signal" | "publish">>;
  #publish: (caBundlePem: string) => Promise<void>;
  #clock: Clock;
  #serving!: WebhookCertificate;
  #stored!: Stored;
  #listeners = new Set<(cert: WebhookCertificate) => void>();
  #timers = new Set<TimerId>();
  #publishedBundle = "";
  #closed = false;
  #syncing: Promise<void> = Promise.resolve();

  /** @internal Use {@linkcode selfManagedCertificates}. */
  constructor(client: Client, options: SelfManagedCertificatesOptions) {
    this.#client = client;
    this.#clock = options.clock ?? realClock;
    this.#opts = {
      name: options.name,
      namespace: options.namespace,
      serviceName: options.serviceName ?? `${options.name}-webhook`,
      secretName: options.secretName ?? `${options.name}-webhook-certs`,
      configurations: options.configurations ?? [options.name],
      hosts: options.hosts ?? ["localhost", "127.0.0.1"],
      validForMs: options.validForMs ?? 365 * 24 * 3_600_000,
      renewAt: options.renewAt ?? 2 / 3,
      caPropagationMs: options.caPropagationMs ?? 10_000,
      store: options.store ?? "secret",
      clock: this.#clock,
    };
    this.#publish = options.publish ?? (async (bundle) => {
      for (const name of this.#opts.configurations) {
        await patchCaBundle(this.#client, name, bundle);
      }
    });
    options.signal?.addEventListener("abort", () => this.close(), { once: true });
  }

  /** The certificate to serve now. */
  get current(): WebhookCertificate {
    return this.#serving;
  }

  /** The Secret's current content: during a renewal, ahead of {@linkcode current}. */
  get stored(): WebhookCertificate {
    return this.#stored;
  }

  /**
   * Calls `listener` with each new certificate to serve.
   * @param listener Receives the new certificate.
   * @returns A function that removes the listener.
   */
  onChange(listener: (cert: WebhookCertificate) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** @internal Reads or creates the Secret, publishes the CA bundle and schedules renewal. */
  async start(): Promise<this> {
    await this.#sync(true);
    return this;
  }

  /** Stops renewal timers. */
  close(): void {
    this.#closed = true;
    for (const t of this.#timers) this.#clock.clearTimeout(t);
    this.#timers.clear();
  }

  /** Same as {@linkcode SelfManagedCertificates.close}, after a running renewal. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
    await this.#syncing.catch(() => {});
  }

  #after(ms: number, fn: () => void): void {
    if (this.#closed) return;
    // Timers overflow past 2^31-1 ms (about 24.8 days): wait in steps.
    const step = Math.min(Math.max(0, ms), MAX_TIMER_MS);
    const id = this.#clock.setTimeout(() => {
      this.#timers.delete(id);
      if (this.#closed) return;
      if (ms > MAX_TIMER_MS) this.#after(ms - MAX_TIMER_MS, fn);
      else fn();
    }, step);
    this.#timers.add(id);
  }

  #scheduleSync(ms: number): void {
    this.#after(ms, () => {
      this.#syncing = this.#sync(false).catch((err) => {
        const retry = Math.min(
          30_000,
          Math.max(200, (this.#stored.notAfter.getTime() - this.#clock.now()) / 10),
        );
        log.warn("Cannot renew webhook certificates, retrying in {retry} ms: {message}", {
          retry,
          message: (err as Error).message,
        });
        this.#scheduleSync(retry);
      });
    });
  }

  async #sync(initial: boolean): Promise<void> {
    const o = this.#opts;
    let stored: Stored | undefined;
    if (o.store === "memory") {
      const held = this.#stored as Stored | undefined;
      stored = held && this.#clock.now() < held.renewAt
        ? held
        : await this.#issue(held, initial && !held);
      if (stored !== held) {
        log.info("Issued webhook certificate valid until {notAfter}, kept in memory", {
          notAfter: stored.notAfter.toISOString(),
        });
      }
    }
    for (let attempt = 0; !stored; attempt++) {
      if (attempt > 10) {
        throw new WebhookCertificatesError(
          `Cannot store webhook certificates in Secret "${o.namespace}/${o.secretName}": too many conflicts`,
        );
      }
      let secret: Secret | undefined;
      try {
        secret = await this.#client.get(Secret, o.secretName, { namespace: o.namespace });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      const existing = secret ? this.#parse(secret) : undefined;
      if (existing && this.#clock.now() < existing.renewAt) {
        stored = existing;
        break;
      }
      const next = await this.#issue(existing, initial && !existing);
      const body: Secret = {
        metadata: {
          name: o.secretName,
          namespace: o.namespace,
          resourceVersion: secret?.metadata.resourceVersion,
          labels: { "app.kubernetes.io/name": o.name, "app.kubernetes.io/managed-by": "kubeno" },
          annotations: {
            [RENEW_AT]: new Date(next.renewAt).toISOString(),
            [SERVE_AFTER]: new Date(next.serveAfter).toISOString(),
          },
        },
        type: "kubernetes.io/tls",
        stringData: {
          "tls.crt": next.certPem,
          "tls.key": next.keyPem,
          "ca.crt": next.caPem,
          "ca-bundle.crt": next.caBundlePem,
        },
      };
      try {
        if (secret) await this.#client.replace(Secret, body);
        else await this.#client.create(Secret, body);
        log.info("Issued webhook certificate valid until {notAfter} in Secret {namespace}/{name}", {
          notAfter: next.notAfter.toISOString(),
          namespace: o.namespace,
          name: o.secretName,
        });
        stored = next;
      } catch (err) {
        // Another replica wrote first: read what it wrote.
        if (!isConflict(err) && !isAlreadyExists(err)) throw err;
      }
    }
    await this.#adopt(stored, initial);
  }

  async #issue(old: Stored | undefined, fresh: boolean): Promise<Stored> {
    const o = this.#opts;
    const now = this.#clock.now();
    const common = { validForMs: o.validForMs, now: new Date(now) };
    const ca = await createCa(`${o.name}-webhook-ca`, common);
    const svc = `${o.serviceName}.${o.namespace}.svc`;
    const ips = o.hosts.filter((h) => /^[\d.]+$|:/.test(h));
    const dns = [svc, `${svc}.cluster.local`, ...o.hosts.filter((h) => !ips.includes(h))];
    const leaf = await issueCert(
      { ...common, commonName: svc, dnsNames: dns, ipAddresses: ips, server: true },
      ca,
    );
    const oldValid = old && old.notAfter.getTime() > now;
    const serveAfter = fresh || !oldValid
      ? now
      : now + Math.min(o.caPropagationMs, (old.notAfter.getTime() - now) / 2);
    return {
      certPem: leaf.certPem,
      keyPem: leaf.keyPem,
      caPem: ca.certPem,
      caBundlePem: ca.certPem + (oldValid ? old.caPem : ""),
      notAfter: leaf.notAfter,
      renewAt: now + o.validForMs * o.renewAt,
      serveAfter,
    };
  }

  #parse(secret: Secret): Stored | undefined {
    const get = (k: string) => {
      const v = secret.data?.[k];
      if (!v) return undefined;
      try {
        return new TextDecoder().decode(Uint8Array.from(atob(v), (c) => c.charCodeAt(0)));
      } catch {
        return undefined;
      }
    };
    const certPem = get("tls.crt");
    const keyPem = get("tls.key");
    const caPem = get("ca.crt");
    if (!certPem || !keyPem || !caPem) return undefined;
    try {
      const x509 = checkCertificate({ certPem, keyPem });
      const svc = `${this.#opts.serviceName}.${this.#opts.namespace}.svc`;
      if (!x509.checkIssued(new X509Certificate(caPem))) return undefined;
      if (!(x509.subjectAltName ?? "").split(", ").includes(`DNS:${svc}`)) return undefined;
      const notAfter = x509.validToDate;
      const from = x509.validFromDate.getTime();
      const annotated = Date.parse(secret.metadata.annotations?.[RENEW_AT] ?? "");
      const renewAt = Number.isFinite(annotated) && annotated < notAfter.getTime()
        ? annotated
        : from + (notAfter.getTime() - from) * this.#opts.renewAt;
      const serveAfter = Date.parse(secret.metadata.annotations?.[SERVE_AFTER] ?? "") || 0;
      const caBundlePem = get("ca-bundle.crt") ?? caPem;
      return { certPem, keyPem, caPem, caBundlePem, notAfter, renewAt, serveAfter };
    } catch {
      return undefined;
    }
  }

  async #adopt(stored: Stored, initial: boolean): Promise<void> {
    const changed = this.#stored?.certPem !== stored.certPem;
    this.#stored = stored;
    if (stored.caBundlePem !== this.#publishedBundle) {
      await this.#publish(stored.caBundlePem);
      this.#publishedBundle = stored.caBundlePem;
    }
    const now = this.#clock.now();
    if (initial || !this.#serving) {
      this.#serving = publicOf(stored);
    } else if (changed) {
      this.#after(stored.serveAfter - now, () => this.#switchTo(stored));
    }
    this.#scheduleSync(stored.renewAt - now);
  }

  #switchTo(stored: Stored): void {
    if (this.#serving.certPem === stored.certPem) return;
    this.#serving = publicOf(stored);
    log.info("Serving renewed webhook certificate valid until {notAfter}", {
      notAfter: stored.notAfter.toISOString(),
    });
    for (const l of this.#listeners) {
      try {
        l(this.#serving);
      } catch (err) {
        log.error("Certificate listener failed: {message}", { message: (err as Error).message });
      }
    }
  }
}

function publicOf(s: Stored): WebhookCertificate {
  return { certPem: s.certPem, keyPem: s.keyPem, caBundlePem: s.caBundlePem, notAfter: s.notAfter };
}

/**
 * Starts self-managed certificates: reads or creates the Secret, publishes the CA bundle into
 * the webhook configurations and schedules renewal. Wire `onChange` to the server's
 * `setCertificate`.
 *
 * @param client The client.
 * @param options Operator name, namespace, Service, lifetimes, clock, signal.
 * @returns The running certificates; close them (or `await using`) to stop renewal.
 * @throws {ApiError} When the Secret cannot be read or written.
 *
 * @example Serve with self-managed certificates
 * ```ts ignore — needs a live API server (the certificate lives in a Secret)
 * import { selfManagedCertificates } from "./self_managed_certs.ts";
 * import { startWebhookServer } from "./server.ts";
 * import { admission } from "./admission.ts";
 * import { createClient } from "../client/client.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 *
 * using client = await createClient();
 * const webhooks = [admission(ConfigMap, { validate: () => undefined })];
 * await using certs = await selfManagedCertificates(client, { name: "myapp-operator", namespace: "myapp-system" });
 * await using server = await startWebhookServer({ webhooks, certificate: certs.current });
 * certs.onChange((cert) => server.setCertificate(cert));
 * ```
 */
export function selfManagedCertificates(
  client: Client,
  options: SelfManagedCertificatesOptions,
): Promise<SelfManagedCertificates> {
  return new SelfManagedCertificates(client, options).start();
}

/**
 * The self-managed webhook certificates could not be kept: their Secret could not be stored.
 *
 * @example The one-line message
 * ```ts
 * import { WebhookCertificatesError } from "./self_managed_certs.ts";
 * const err = new WebhookCertificatesError("Cannot do it");
 * if (err.name !== "WebhookCertificatesError" || err.message !== "Cannot do it") throw new Error(err.name);
 * ```
 */
export class WebhookCertificatesError extends KubenoError {
  /**
   * Creates the error.
   *
   * @param message What failed, one line.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "WebhookCertificatesError";
  }
}
