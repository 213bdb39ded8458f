/**
 * Supplied webhook certificates: a directory with `tls.crt` and `tls.key` (and optionally
 * `ca.crt`), as cert-manager writes into a Secret volume, reloaded when the files change.
 *
 * Flow: the files are read at start; `Deno.watchFs` on the directory triggers a reload (the
 * kubelet swaps a `..data` symlink, so any event in the directory counts), and a poll catches
 * what the watcher misses (network filesystems, watcher errors). A new pair is adopted only
 * when it parses and the key matches the certificate; a half-written or broken pair is logged
 * and the old one kept.
 *
 * @module
 */
import { getLogger } from "../util/log.ts";
import { type Clock, realClock, type TimerId } from "../util/clock.ts";
import type { CertificateSource, WebhookCertificate } from "./self_managed_certs.ts";
import { checkCertificate } from "./server.ts";
import { KubenoError } from "../util/error.ts";

const log = getLogger(["kubeno", "webhook"]);

/** A supplied certificate directory that cannot be used; the message names it and why. */
export class CertificateDirError extends KubenoError {
  /**
   * @param message What is wrong, naming the directory.
   * @param options The standard `cause`.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "CertificateDirError";
  }
}

/** Options of {@linkcode watchCertificateDir}. */
export interface CertificateDirOptions {
  /**
   * Time between polls of the files, besides file-system events.
   * @default 10000
   */
  pollIntervalMs?: number;
  /**
   * Use file-system events (`Deno.watchFs`); polling alone when false.
   * @default true
   */
  watch?: boolean;
  /** The clock for polling. @default realClock */
  clock?: Clock;
  /** Stops watching when aborted. */
  signal?: AbortSignal;
}

/** A watched certificate directory, as {@linkcode watchCertificateDir} returns it. */
export class CertificateDir implements CertificateSource, AsyncDisposable {
  #dir: string;
  #current: WebhookCertificate;
  #listeners = new Set<(cert: WebhookCertificate) => void>();
  #watcher: Deno.FsWatcher | undefined;
  #timer: TimerId | undefined;
  #clock: Clock;
  #pollMs: number;
  #closed = false;
  #debounce: TimerId | undefined;
  #loop: Promise<void> = Promise.resolve();

  /** @internal Use {@linkcode watchCertificateDir}. */
  constructor(dir: string, first: WebhookCertificate, options: CertificateDirOptions) {
    this.#dir = dir;
    this.#current = first;
    this.#clock = options.clock ?? realClock;
    this.#pollMs = options.pollIntervalMs ?? 10_000;
    if (options.watch ?? true) {
      try {
        this.#watcher = Deno.watchFs(dir, { recursive: false });
        this.#loop = this.#watch(this.#watcher);
      } catch (err) {
        log.warn("Cannot watch {dir}, polling only: {message}", {
          dir,
          message: (err as Error).message,
        });
      }
    }
    this.#schedulePoll();
    options.signal?.addEventListener("abort", () => this.close(), { once: true });
  }

  /** The certificate to serve now. */
  get current(): WebhookCertificate {
    return this.#current;
  }

  /**
   * Calls `listener` with each new certificate.
   * @param listener Receives the new certificate.
   * @returns A function that removes the listener.
   */
  onChange(listener: (cert: WebhookCertificate) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Reads the files now and adopts them when they changed and are valid.
   * @returns True when a new certificate was adopted.
   */
  async reload(): Promise<boolean> {
    let next: WebhookCertificate;
    try {
      next = await readCertificateDir(this.#dir);
    } catch (err) {
      log.warn("Keeping the current webhook certificate: {message}", {
        message: (err as Error).message,
      });
      return false;
    }
    if (
      this.#closed || next.certPem === this.#current.certPem && next.keyPem === this.#current.keyPem
    ) {
      return false;
    }
    this.#current = next;
    log.info("Loaded webhook certificate from {dir}, valid until {notAfter}", {
      dir: this.#dir,
      notAfter: next.notAfter.toISOString(),
    });
    for (const l of this.#listeners) {
      try {
        l(next);
      } catch (err) {
        log.error("Certificate listener failed: {message}", { message: (err as Error).message });
      }
    }
    return true;
  }

  /** Stops watching and polling. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#watcher?.close();
    } catch { /* already closed */ }
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    if (this.#debounce !== undefined) this.#clock.clearTimeout(this.#debounce);
  }

  /** Same as {@linkcode CertificateDir.close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
    await this.#loop;
  }

  async #watch(watcher: Deno.FsWatcher): Promise<void> {
    try {
      for await (const _ of watcher) {
        // Writers replace several files; reload once they are done.
        if (this.#debounce !== undefined) this.#clock.clearTimeout(this.#debounce);
        this.#debounce = this.#clock.setTimeout(() => void this.reload(), 50);
      }
    } catch (err) {
      if (!this.#closed) {
        log.warn("Watching {dir} failed, polling only: {message}", {
          dir: this.#dir,
          message: (err as Error).message,
        });
      }
    }
  }

  #schedulePoll(): void {
    if (this.#closed) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.reload().finally(() => this.#schedulePoll());
    }, this.#pollMs);
  }
}

/**
 * Reads `tls.crt`, `tls.key` and (optionally) `ca.crt` from a directory.
 *
 * @param dir The directory.
 * @returns The certificate; `caBundlePem` is `ca.crt`, else empty.
 * @throws {CertificateDirError} When a file cannot be read, or the pair is invalid (naming
 * the directory).
 *
 * @example
 * ```ts
 * import { createCa } from "../util/x509.ts";
 * import { readCertificateDir } from "./cert_dir.ts";
 * const dir = await Deno.makeTempDir();
 * const c = await createCa("example");
 * await Deno.writeTextFile(`${dir}/tls.crt`, c.certPem);
 * await Deno.writeTextFile(`${dir}/tls.key`, c.keyPem);
 * const cert = await readCertificateDir(dir);
 * if (cert.certPem !== c.certPem || cert.caBundlePem !== "") throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function readCertificateDir(dir: string): Promise<WebhookCertificate> {
  let certPem: string;
  let keyPem: string;
  try {
    [certPem, keyPem] = await Promise.all([
      Deno.readTextFile(`${dir}/tls.crt`),
      Deno.readTextFile(`${dir}/tls.key`),
    ]);
  } catch (err) {
    throw new CertificateDirError(
      `Cannot read webhook certificate from "${dir}": ${
        (err as Error).message
      } (expected tls.crt and tls.key)`,
      { cause: err },
    );
  }
  const caBundlePem = await Deno.readTextFile(`${dir}/ca.crt`).catch(() => "");
  try {
    const x509 = checkCertificate({ certPem, keyPem });
    return { certPem, keyPem, caBundlePem, notAfter: x509.validToDate };
  } catch (err) {
    throw new CertificateDirError(
      `Cannot use webhook certificate from "${dir}": ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * Loads a supplied certificate directory (`--webhook-cert-path`) and reloads it when the
 * files change. Wire `onChange` to the server's `setCertificate`.
 *
 * @param dir The directory holding `tls.crt` and `tls.key`.
 * @param options Poll interval, watching, clock, signal.
 * @returns The watched directory; close it (or `await using`) to stop watching.
 * @throws {CertificateDirError} When the files cannot be read or do not form a valid pair.
 *
 * @example Follow a cert-manager Secret volume
 * ```ts ignore — reads the certificate directory a cluster mounts into the Pod
 * import { watchCertificateDir } from "./cert_dir.ts";
 * import { startWebhookServer } from "./server.ts";
 * import { admission } from "./admission.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 *
 * const webhooks = [admission(ConfigMap, { validate: () => undefined })];
 * await using certs = await watchCertificateDir("/tmp/k8s-webhook-server/serving-certs");
 * await using server = await startWebhookServer({ webhooks, certificate: certs.current });
 * certs.onChange((cert) => server.setCertificate(cert));
 * ```
 */
export async function watchCertificateDir(
  dir: string,
  options: CertificateDirOptions = {},
): Promise<CertificateDir> {
  return new CertificateDir(dir, await readCertificateDir(dir), options);
}
