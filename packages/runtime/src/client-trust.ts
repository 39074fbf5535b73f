import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { ConfigError } from '@floe/config';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Adds the authorities of `tls.ca_file` to those every TLS client of this process trusts (fetch,
 * https, tls.connect; gRPC clients read them through `tls.getCACertificates('default')`). Called
 * once at process start, before any service connects anywhere.
 */
export function trustConfiguredAuthorities(caFile: string): void {
  if (caFile === '') return;
  let pem: string;
  try {
    pem = readFileSync(caFile, 'utf8');
  } catch (err) {
    throw new ConfigError([`tls.ca_file: cannot read ${caFile}: ${(err as Error).message}`]);
  }
  const certs = pem.match(PEM_CERTIFICATE) ?? [];
  if (certs.length === 0) throw new ConfigError([`tls.ca_file: ${caFile} holds no PEM certificate`]);
  tls.setDefaultCACertificates([...new Set([...tls.getCACertificates('default'), ...certs])]);
}

/** This host's `port` as a client reaches it: https when the process serves TLS (config `tls`). */
export const localUrl = (config: { tls: { cert_file: string } }, port: number): string => `${config.tls.cert_file ? 'https' : 'http'}://127.0.0.1:${port}`;
