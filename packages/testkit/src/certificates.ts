import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A throwaway certificate authority in a directory of its own, made with the openssl CLI. */
export interface TestAuthority {
  dir: string;
  caFile: string;
  caPem: Buffer;
  /**
   * A server certificate signed by this authority for `names` (DNS names and IP addresses),
   * written to `<stem>.pem` and `<stem>.key` in dir (an existing pair is overwritten: a rotation).
   * `clientAuth`: it may also be presented as a client certificate (mutual TLS).
   */
  issue(stem: string, names: string[], opts?: { clientAuth?: boolean }): { certFile: string; keyFile: string; serial: string };
}

const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

export function makeTestAuthority(): TestAuthority {
  const dir = mkdtempSync(join(tmpdir(), 'floe-tls-'));
  const caFile = join(dir, 'ca.pem');
  const caKey = join(dir, 'ca.key');
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey, '-out', caFile, '-days', '2', '-subj', '/CN=Floe test CA']);
  let issued = 0;
  return {
    dir,
    caFile,
    caPem: readFileSync(caFile),
    issue(stem, names, opts) {
      const certFile = join(dir, `${stem}.pem`);
      const keyFile = join(dir, `${stem}.key`);
      const csr = join(dir, `${stem}-${++issued}.csr`);
      const ext = join(dir, `${stem}-${issued}.ext`);
      const san = names.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
      writeFileSync(ext, `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth${opts?.clientAuth ? ',clientAuth' : ''}\n`);
      // Key and certificate are written to temporary names and then over the served ones, as a
      // mounted secret changes: a reader never sees a certificate without its key for long.
      const tmpKey = `${keyFile}.new`;
      const tmpCert = `${certFile}.new`;
      openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', tmpKey, '-out', csr, '-subj', `/CN=${names[0]}`]);
      openssl(['x509', '-req', '-in', csr, '-CA', caFile, '-CAkey', caKey, '-set_serial', String(Date.now() * 1000 + issued), '-out', tmpCert, '-days', '2', '-extfile', ext]);
      writeFileSync(keyFile, readFileSync(tmpKey));
      writeFileSync(certFile, readFileSync(tmpCert));
      const serial = openssl(['x509', '-in', certFile, '-noout', '-serial']).trim().replace(/^serial=/, '');
      return { certFile, keyFile, serial };
    },
  };
}
