import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A certificate authority: its certificate goes into the webhook registration's caBundle. */
export interface CertificateAuthority {
  certPem: string;
  keyPem: string;
  notAfter: Date;
}

/** The webhook's serving certificate, signed by the CA, for the names the API server dials. */
export interface ServingCertificate {
  certPem: string;
  keyPem: string;
  notAfter: Date;
}

export function notAfterOf(certPem: string): Date {
  return new Date(new X509Certificate(certPem).validTo);
}

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run('openssl', args, { cwd });
  } catch (err) {
    const detail = err instanceof Error && 'stderr' in err ? String((err as { stderr: unknown }).stderr) : String(err);
    throw new Error(`openssl ${args[0]} failed (is openssl installed?): ${detail.trim()}`, { cause: err });
  }
}

async function inTempDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ripple-webhook-'));
  try {
    return await work(dir);
  } finally {
    // The CA key never outlives this call on disk.
    await rm(dir, { recursive: true, force: true });
  }
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A new self-signed CA (P-256), valid for `days`. */
export async function generateCa(days: number, commonName = 'ripple-webhook-ca'): Promise<CertificateAuthority> {
  return inTempDir(async (dir) => {
    await openssl(
      ['req', '-x509', ...EC_KEY, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', String(days), '-subj', `/CN=${commonName}`,
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
      dir,
    );
    const certPem = await readFile(path.join(dir, 'ca.crt'), 'utf8');
    return { certPem, keyPem: await readFile(path.join(dir, 'ca.key'), 'utf8'), notAfter: notAfterOf(certPem) };
  });
}

/**
 * A serving certificate signed by `ca` for `hosts` (IP addresses or DNS names, all put in subjectAltName: the API
 * server, like every Go client, ignores the common name), valid for `days`.
 */
export async function issueServingCertificate(ca: CertificateAuthority, hosts: readonly string[], days: number): Promise<ServingCertificate> {
  if (hosts.length === 0) throw new Error('a serving certificate needs at least one host name or IP');
  const san = hosts.map((h) => (/^[\d.]+$/.test(h) || h.includes(':') ? `IP:${h}` : `DNS:${h}`)).join(',');
  return inTempDir(async (dir) => {
    await writeFile(path.join(dir, 'ca.crt'), ca.certPem);
    await writeFile(path.join(dir, 'ca.key'), ca.keyPem, { mode: 0o600 });
    await writeFile(
      path.join(dir, 'ext.cnf'),
      `subjectAltName=${san}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n`,
    );
    await openssl(['req', ...EC_KEY, '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', `/CN=${hosts[0]}`], dir);
    await openssl(
      ['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'tls.crt', '-days', String(days), '-extfile', 'ext.cnf'],
      dir,
    );
    const certPem = await readFile(path.join(dir, 'tls.crt'), 'utf8');
    return { certPem, keyPem: await readFile(path.join(dir, 'tls.key'), 'utf8'), notAfter: notAfterOf(certPem) };
  });
}
