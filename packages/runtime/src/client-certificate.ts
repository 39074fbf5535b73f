import { readFileSync } from 'node:fs';
import https from 'node:https';
import { Agent, setGlobalDispatcher } from 'undici';
import { CLIENT_CERT_FILE_ENV, CLIENT_KEY_FILE_ENV } from '@floe/client';
import { ConfigError } from '@floe/config';
import { presentClientCertificate } from '@floe/flight';
import type { CertificatePair } from './server-tls.ts';

/** A certificate to present, as of now, and word of its renewals (a ServerTls is one). */
export interface CertificateSource {
  current(): CertificatePair;
  onRenewal(listener: (pair: CertificatePair) => void): void;
}

/**
 * With mutual TLS (tls.client_ca_file), Floe's processes call each other's TLS ports (router to
 * querier over grpc+tls, the ruler's remote write and self-monitoring to an acceptor over https)
 * and must present a certificate the other side's client_ca_file signed: the process's own. So
 * every outgoing TLS connection of the process offers it to a server that asks: fetch through
 * undici's global dispatcher, node:https through its global agent (which self-monitoring's OTLP
 * exporters use), Flight channels through the flight client. A renewed pair replaces it for new
 * connections. A server that asks for no client certificate never sees it.
 */
export function presentProcessCertificate(source: CertificateSource): void {
  const present = (pair: CertificatePair) => {
    setGlobalDispatcher(new Agent({ connect: { cert: pair.cert, key: pair.key } }));
    // The agent's pools are keyed by cert and key too: the renewed pair opens new connections.
    Object.assign(https.globalAgent.options, { cert: pair.cert, key: pair.key });
  };
  present(source.current());
  source.onRenewal(present);
  presentClientCertificate(() => source.current());
}

/**
 * The `floe` CLI's client certificate for servers that demand one: FLOE_CLIENT_CERT_FILE and
 * FLOE_CLIENT_KEY_FILE (PEM), read once; undefined when neither is set.
 */
export function clientCertificateFromEnv(env: NodeJS.ProcessEnv = process.env): CertificateSource | undefined {
  const certFile = env[CLIENT_CERT_FILE_ENV] ?? '';
  const keyFile = env[CLIENT_KEY_FILE_ENV] ?? '';
  if (certFile === '' && keyFile === '') return undefined;
  if (certFile === '' || keyFile === '') throw new ConfigError([`${CLIENT_CERT_FILE_ENV} and ${CLIENT_KEY_FILE_ENV}: set both, or neither`]);
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new ConfigError([`${name}: cannot read ${file}: ${(err as Error).message}`]);
    }
  };
  const pair = { cert: read(CLIENT_CERT_FILE_ENV, certFile), key: read(CLIENT_KEY_FILE_ENV, keyFile) };
  return { current: () => pair, onRenewal: () => {} };
}
