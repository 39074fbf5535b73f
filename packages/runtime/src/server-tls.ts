import { readFileSync } from 'node:fs';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { Server as NetServer } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { ConfigError, type FloeConfig } from '@floe/config';

/** A certificate chain and its private key, PEM, as last read from tls.cert_file and tls.key_file. */
export interface CertificatePair {
  cert: Buffer;
  key: Buffer;
}

/** What the files hold: the pair, and the authorities of tls.client_ca_file when client certificates are asked for. */
interface ServedFiles extends CertificatePair {
  clientCa?: Buffer;
}

/** Options for `https.createServer`: the pair, and with client_ca_file the demand for a client certificate it signed. */
export type ServerTlsOptions = CertificatePair & { ca?: Buffer; requestCert?: boolean; rejectUnauthorized?: boolean };

interface Warn {
  warn(obj: object, msg: string): void;
}

/**
 * The process's server certificate (config `tls`), re-read every `reload_interval`, so a renewed
 * certificate reaches new connections without a restart. One source for every listener kind:
 * Node's TLS servers follow it through `serve`, gRPC servers through `grpcCredentials`.
 */
export interface ServerTls {
  /** Options for `https.createServer` / fastify's `https`, as of now. */
  serverOptions(): ServerTlsOptions;
  /** Whether connections must present a client certificate (tls.client_ca_file): Floe's own clients then present `current()`. */
  readonly mutual: boolean;
  /** The pair as last read. */
  current(): CertificatePair;
  /** Calls `listener` with each renewed pair (after the servers have it). */
  onRenewal(listener: (pair: CertificatePair) => void): void;
  /** Keeps a Node TLS server's certificate current until `close` (an https server typed as http by its framework is fine). */
  serve(server: NetServer): void;
  /** Server credentials whose certificate follows the files as well. */
  grpcCredentials(): grpc.ServerCredentials;
  close(): void;
}

/** Reads and checks the files; a problem is a ConfigError naming the key, so start fails with it. */
function readFiles(t: FloeConfig['tls']): ServedFiles {
  const read = (key: 'cert_file' | 'key_file' | 'client_ca_file'): Buffer => {
    try {
      return readFileSync(t[key]);
    } catch (err) {
      throw new ConfigError([`tls.${key}: cannot read ${t[key]}: ${(err as Error).message}`]);
    }
  };
  const cert = read('cert_file');
  const key = read('key_file');
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (err) {
    throw new ConfigError([`tls.cert_file: ${t.cert_file} holds no PEM certificate: ${(err as Error).message}`]);
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new ConfigError([`tls.key_file: ${t.key_file} holds no PEM private key: ${(err as Error).message}`]);
  }
  if (!leaf.checkPrivateKey(privateKey)) throw new ConfigError([`tls.key_file: ${t.key_file} is not the private key of the certificate in ${t.cert_file}`]);
  if (t.client_ca_file === '') return { cert, key };
  const clientCa = read('client_ca_file');
  try {
    new X509Certificate(clientCa);
  } catch (err) {
    throw new ConfigError([`tls.client_ca_file: ${t.client_ca_file} holds no PEM certificate: ${(err as Error).message}`]);
  }
  return { cert, key, clientCa };
}

const sameFiles = (a: ServedFiles, b: ServedFiles) => a.cert.equals(b.cert) && a.key.equals(b.key) && (a.clientCa === undefined ? b.clientCa === undefined : b.clientCa !== undefined && a.clientCa.equals(b.clientCa));

/** The process's server TLS, or undefined when `tls.cert_file` is empty (cleartext). */
export function serverTlsFromConfig(t: FloeConfig['tls'], log?: Warn): ServerTls | undefined {
  if (t.cert_file === '') return undefined;
  let files = readFiles(t);
  const mutual = files.clientCa !== undefined;
  const servers = new Set<TlsServer>();
  const identityListeners = new Set<(u: { certificate: Buffer; privateKey: Buffer } | null) => void>();
  const caListeners = new Set<(u: { caCertificate: Buffer } | null) => void>();
  const renewalListeners: Array<(pair: CertificatePair) => void> = [];
  const identity = () => ({ certificate: files.cert, privateKey: files.key });
  const authorities = () => ({ caCertificate: files.clientCa! });

  const reload = () => {
    let next: ServedFiles;
    try {
      next = readFiles(t);
    } catch (err) {
      // A rotation caught half-written: keep serving the pair that worked and try again next time.
      log?.warn({ err: (err as Error).message }, 'tls: certificate files not reloaded; the previous certificate stays');
      return;
    }
    if (sameFiles(next, files)) return;
    files = next;
    for (const server of servers) server.setSecureContext({ cert: files.cert, key: files.key, ...(files.clientCa ? { ca: files.clientCa } : {}) });
    for (const listener of identityListeners) listener(identity());
    if (files.clientCa) for (const listener of caListeners) listener(authorities());
    for (const listener of renewalListeners) listener({ cert: files.cert, key: files.key });
  };
  const timer = setInterval(reload, t.reload_interval);
  timer.unref();

  // grpc-js takes certificate providers: these hand it whatever the timer last read. Not
  // synchronously: grpc-js adds its server's watcher only after the add call returns, and a
  // watcher that misses the first certificate leaves the port dropping every connection.
  const later = <L>(listeners: Set<L>, listener: L, give: (l: L) => void) => {
    listeners.add(listener);
    queueMicrotask(() => {
      if (listeners.has(listener)) give(listener);
    });
  };
  const identityProvider: grpc.experimental.CertificateProvider = {
    addCaCertificateListener: () => {},
    removeCaCertificateListener: () => {},
    addIdentityCertificateListener: (listener) => later(identityListeners, listener, (l) => l(identity())),
    removeIdentityCertificateListener: (listener) => void identityListeners.delete(listener),
  };
  const caProvider: grpc.experimental.CertificateProvider = {
    addCaCertificateListener: (listener) => later(caListeners, listener, (l) => l(authorities())),
    removeCaCertificateListener: (listener) => void caListeners.delete(listener),
    addIdentityCertificateListener: () => {},
    removeIdentityCertificateListener: () => {},
  };

  return {
    mutual,
    current: () => ({ cert: files.cert, key: files.key }),
    onRenewal: (listener) => void renewalListeners.push(listener),
    serverOptions: () => ({ cert: files.cert, key: files.key, ...(files.clientCa ? { ca: files.clientCa, requestCert: true, rejectUnauthorized: true } : {}) }),
    serve: (server) => {
      if (!(server instanceof TlsServer)) throw new Error('ServerTls.serve: the server was not created with TLS options');
      servers.add(server);
      server.once('close', () => servers.delete(server));
    },
    // The exported function's parameters are named (ca, identity, …) but it passes them to the
    // constructor as (identity, ca, …): the identity provider goes first.
    grpcCredentials: () => grpc.experimental.createCertificateProviderServerCredentials(identityProvider, mutual ? caProvider : null, mutual),
    close: () => {
      clearInterval(timer);
      servers.clear();
      identityListeners.clear();
      caListeners.clear();
      renewalListeners.length = 0;
    },
  };
}
