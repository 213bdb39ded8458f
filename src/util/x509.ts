/**
 * Minimal X.509 v3 certificate issuing on top of WebCrypto (ECDSA P-256, SHA-256).
 *
 * kubeno needs certificates for its test control plane and for webhook serving; Deno's
 * native TLS (rustls/webpki) rejects v1 certificates, so every certificate here is v3 with
 * basicConstraints, keyUsage, extKeyUsage, subjectAltName and key identifiers.
 *
 * @module
 */

/** A key pair plus its PEM encodings. */
export interface KeyPair {
  /** The private key (ECDSA P-256, extractable). */
  privateKey: CryptoKey;
  /** The public key. */
  publicKey: CryptoKey;
  /** PKCS#8 private key, PEM. */
  keyPem: string;
  /** SubjectPublicKeyInfo, PEM. */
  publicKeyPem: string;
  /** SubjectPublicKeyInfo, DER. */
  spki: Uint8Array<ArrayBuffer>;
}

/** An issued certificate with its key. */
export interface IssuedCert extends KeyPair {
  /** The certificate, PEM. */
  certPem: string;
  /** The certificate, DER. */
  der: Uint8Array;
  /** Subject DN as DER, for issuing children. */
  subjectDer: Uint8Array;
  /** The end of the validity period. */
  notAfter: Date;
}

/** What to put in a certificate. */
export interface CertRequest {
  /** The subject's common name; the API server reads it as the user name. */
  commonName: string;
  /** Organizations; the API server reads them as the user's groups. */
  organizations?: string[];
  /** DNS names of the subjectAltName extension. */
  dnsNames?: string[];
  /** IP addresses (v4 or v6) of the subjectAltName extension. */
  ipAddresses?: string[];
  /** A CA certificate: may sign others. @default false */
  isCa?: boolean;
  /** Usable by a TLS server (extKeyUsage serverAuth). @default false */
  server?: boolean;
  /** Usable by a TLS client (extKeyUsage clientAuth). @default false */
  client?: boolean;
  /** How long the certificate is valid from `now`. @default 365 days */
  validForMs?: number;
  /** Backdating protects against small clock skew. @default 5 minutes */
  backdateMs?: number;
  /** The issuing time. @default the current time */
  now?: Date;
}

const OID = {
  ecPublicKey: "1.2.840.10045.2.1",
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  subjectKeyId: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyId: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
};

/**
 * Generates an ECDSA P-256 key pair.
 *
 * @returns The keys and their PEM encodings.
 */
export async function generateKeyPair(): Promise<KeyPair> {
  const { privateKey, publicKey } = await crypto.subtle.generateKey(
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["sign", "verify"],
  );
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", privateKey));
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", publicKey));
  return {
    privateKey,
    publicKey,
    spki,
    keyPem: pem("PRIVATE KEY", pkcs8),
    publicKeyPem: pem("PUBLIC KEY", spki),
  };
}

/**
 * Issues a self-signed CA certificate.
 *
 * @param commonName The CA's common name.
 * @param opts Other fields of the request.
 * @returns The CA certificate with its key.
 *
 * @example A CA that signs a serving certificate
 * ```ts
 * import { createCa, issueCert } from "./x509.ts";
 * const ca = await createCa("example-ca");
 * const cert = await issueCert({ commonName: "web", dnsNames: ["web.local"], server: true }, ca);
 * if (!cert.certPem.startsWith("-----BEGIN CERTIFICATE-----")) throw new Error();
 * ```
 */
export function createCa(commonName: string, opts: Partial<CertRequest> = {}): Promise<IssuedCert> {
  return issueCert({ ...opts, commonName, isCa: true });
}

/**
 * Issues a certificate signed by `issuer`, or self-signed when `issuer` is absent.
 *
 * @param req What to put in the certificate.
 * @param issuer The signing CA.
 * @returns The certificate with its new key.
 *
 * @example A client certificate for a user in a group
 * ```ts
 * import { createCa, issueCert } from "./x509.ts";
 * const ca = await createCa("example-ca");
 * const user = await issueCert({ commonName: "alice", organizations: ["devs"], client: true }, ca);
 * if (user.notAfter <= new Date()) throw new Error();
 * ```
 */
export async function issueCert(req: CertRequest, issuer?: IssuedCert): Promise<IssuedCert> {
  const keys = await generateKeyPair();
  const now = req.now ?? new Date();
  const notBefore = new Date(now.getTime() - (req.backdateMs ?? 5 * 60_000));
  const notAfter = new Date(now.getTime() + (req.validForMs ?? 365 * 24 * 3600_000));
  const subject = name(req.commonName, req.organizations ?? []);
  const ski = await keyId(keys.spki);
  const issuerSubject = issuer?.subjectDer ?? subject;
  const issuerKeyId = issuer ? await keyId(issuer.spki) : ski;

  const exts: Uint8Array[] = [
    ext(OID.basicConstraints, true, seq(...(req.isCa ? [bool(true)] : []))),
    // CA: digitalSignature|keyCertSign|cRLSign; leaf: digitalSignature.
    ext(OID.keyUsage, true, req.isCa ? bitString(0x86, 1) : bitString(0x80, 7)),
    ext(OID.subjectKeyId, false, octets(ski)),
    ext(OID.authorityKeyId, false, seq(tag(0x80, issuerKeyId))),
  ];
  const eku = [...(req.server ? [OID.serverAuth] : []), ...(req.client ? [OID.clientAuth] : [])];
  if (eku.length) exts.push(ext(OID.extKeyUsage, false, seq(...eku.map(oid))));
  const sans = [
    ...(req.dnsNames ?? []).map((d) => tag(0x82, new TextEncoder().encode(d))),
    ...(req.ipAddresses ?? []).map((ip) => tag(0x87, ipBytes(ip))),
  ];
  if (sans.length) exts.push(ext(OID.subjectAltName, false, seq(...sans)));

  const tbs = seq(
    tag(0xa0, int(new Uint8Array([2]))),
    int(serial()),
    seq(oid(OID.ecdsaWithSha256)),
    issuerSubject,
    seq(time(notBefore), time(notAfter)),
    subject,
    keys.spki,
    tag(0xa3, seq(...exts)),
  );
  const signer = issuer?.privateKey ?? keys.privateKey;
  const raw = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, signer, tbs),
  );
  const sig = seq(int(raw.slice(0, 32)), int(raw.slice(32)));
  const der = seq(tbs, seq(oid(OID.ecdsaWithSha256)), tag(0x03, concat(new Uint8Array([0]), sig)));
  return { ...keys, der, certPem: pem("CERTIFICATE", der), subjectDer: subject, notAfter };
}

/** Wraps DER bytes in PEM armour. */
export function pem(label: string, der: Uint8Array): string {
  let b64 = "";
  const chunk = 0x8000;
  for (let i = 0; i < der.length; i += chunk) {
    b64 += String.fromCharCode(...der.subarray(i, i + chunk));
  }
  const lines = btoa(b64).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

// --- DER encoding ---------------------------------------------------------------------

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function tag(t: number, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const n = body.length;
  let len: number[];
  if (n < 0x80) len = [n];
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = [0x80 | bytes.length, ...bytes];
  }
  return concat(new Uint8Array([t, ...len]), body);
}

const seq = (...items: Uint8Array[]): Uint8Array<ArrayBuffer> => tag(0x30, concat(...items));
const set = (...items: Uint8Array[]) => tag(0x31, concat(...items));
const octets = (b: Uint8Array) => tag(0x04, b);
const bool = (v: boolean) => tag(0x01, new Uint8Array([v ? 0xff : 0]));
const utf8 = (s: string) => tag(0x0c, new TextEncoder().encode(s));
const bitString = (byte: number, unused: number) => tag(0x03, new Uint8Array([unused, byte]));

function int(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0 && bytes[i + 1] < 0x80) i++;
  const b = bytes.subarray(i);
  return tag(0x02, b[0] >= 0x80 ? concat(new Uint8Array([0]), b) : b);
}

function oid(dotted: string): Uint8Array {
  const [a, b, ...rest] = dotted.split(".").map(Number);
  const out = [a * 40 + b];
  for (const n of rest) {
    const stack = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) {
      stack.unshift(0x80 | (v & 0x7f));
    }
    out.push(...stack);
  }
  return tag(0x06, new Uint8Array(out));
}

function time(d: Date): Uint8Array {
  const iso = d.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z"; // YYYYMMDDHHMMSSZ
  const year = d.getUTCFullYear();
  return year < 2050
    ? tag(0x17, new TextEncoder().encode(iso.slice(2)))
    : tag(0x18, new TextEncoder().encode(iso));
}

function name(cn: string, orgs: string[]): Uint8Array {
  return seq(
    ...orgs.map((o) => set(seq(oid(OID.organization), utf8(o)))),
    set(seq(oid(OID.commonName), utf8(cn))),
  );
}

function ext(id: string, critical: boolean, value: Uint8Array): Uint8Array {
  return seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
}

function serial(): Uint8Array {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[0] &= 0x7f;
  b[0] |= 0x01;
  return b;
}

async function keyId(spki: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-1", spki)).slice(0, 20);
}

function ipBytes(ip: string): Uint8Array {
  if (ip.includes(":")) {
    const [head, tail = ""] = ip.split("::");
    const h = head ? head.split(":") : [];
    const t = tail ? tail.split(":") : [];
    const groups = ip.includes("::")
      ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t]
      : h;
    return new Uint8Array(groups.flatMap((g) => {
      const v = parseInt(g, 16);
      return [v >> 8, v & 0xff];
    }));
  }
  return new Uint8Array(ip.split(".").map(Number));
}
