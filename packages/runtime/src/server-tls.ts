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
  serverOptions(): CertificatePair;
  /** Keeps a Node TLS server's certificate current until `close` (an https server typed as http by its framework is fine). */
  serve(server: NetServer): void;
  /** Server credentials whose certificate follows the files as well. */
  grpcCredentials(): grpc.ServerCredentials;
  close(): void;
}

/** Reads and checks the pair; a problem is a ConfigError naming the key, so start fails with it. */
function readPair(t: FloeConfig['tls']): CertificatePair {
  const read = (key: 'cert_file' | 'key_file'): Buffer => {
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
  return { cert, key };
}

/** The process's server TLS, or undefined when `tls.cert_file` is empty (cleartext). */
export function serverTlsFromConfig(t: FloeConfig['tls'], log?: Warn): ServerTls | undefined {
  if (t.cert_file === '') return undefined;
  let pair = readPair(t);
  const servers = new Set<TlsServer>();
  const identityListeners = new Set<(u: { certificate: Buffer; privateKey: Buffer } | null) => void>();
  const identity = () => ({ certificate: pair.cert, privateKey: pair.key });

  const reload = () => {
    let next: CertificatePair;
    try {
      next = readPair(t);
    } catch (err) {
      // A rotation caught half-written: keep serving the pair that worked and try again next time.
      log?.warn({ err: (err as Error).message }, 'tls: certificate files not reloaded; the previous certificate stays');
      return;
    }
    if (next.cert.equals(pair.cert) && next.key.equals(pair.key)) return;
    pair = next;
    for (const server of servers) server.setSecureContext({ cert: pair.cert, key: pair.key });
    for (const listener of identityListeners) listener(identity());
  };
  const timer = setInterval(reload, t.reload_interval);
  timer.unref();

  // grpc-js takes a certificate provider: this one hands it whatever the timer last read.
  const provider: grpc.experimental.CertificateProvider = {
    addCaCertificateListener: () => {},
    removeCaCertificateListener: () => {},
    addIdentityCertificateListener: (listener) => {
      identityListeners.add(listener);
      // Not synchronously: grpc-js adds its server's watcher only after this call returns, and a
      // watcher that misses the first certificate leaves the port dropping every connection.
      queueMicrotask(() => {
        if (identityListeners.has(listener)) listener(identity());
      });
    },
    removeIdentityCertificateListener: (listener) => {
      identityListeners.delete(listener);
    },
  };

  return {
    serverOptions: () => ({ cert: pair.cert, key: pair.key }),
    serve: (server) => {
      if (!(server instanceof TlsServer)) throw new Error('ServerTls.serve: the server was not created with TLS options');
      servers.add(server);
      server.once('close', () => servers.delete(server));
    },
    // The exported function's parameters are named (ca, identity, …) but it passes them to the
    // constructor as (identity, ca, …): the identity provider goes first.
    grpcCredentials: () => grpc.experimental.createCertificateProviderServerCredentials(provider, null, false),
    close: () => {
      clearInterval(timer);
      servers.clear();
      identityListeners.clear();
    },
  };
}
