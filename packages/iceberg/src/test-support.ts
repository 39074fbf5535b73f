// Test helpers (not exported from the package): a temp-dir BlobStore, a PGlite SqlClient with the
// catalog tables, and a loopback HTTP server with HEAD and Range support for icebird.

import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { createReadStream } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import type { BlobStore, SqlClient } from './ports.ts';

/** Blob keys are paths under `root`; uri() is `<uriBase><key>` (file:// + absolute path by default). */
export class FsBlobStore implements BlobStore {
  readonly root: string;
  uriBase: string;
  constructor(root: string, uriBase?: string) {
    this.root = resolve(root);
    this.uriBase = uriBase ?? `file://${this.root}/`;
  }
  path(key: string): string {
    return join(this.root, key);
  }
  async put(key: string, body: Uint8Array): Promise<void> {
    const p = this.path(key);
    await mkdir(dirname(p), { recursive: true });
    const tmp = `${p}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    await writeFile(tmp, body);
    await rename(tmp, p);
  }
  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return new Uint8Array(await readFile(this.path(key)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }
  uri(key: string): string {
    return this.uriBase + key;
  }
  keyFromUri(uri: string): string {
    if (!uri.startsWith(this.uriBase)) throw new Error(`uri ${uri} is not under ${this.uriBase}`);
    return uri.slice(this.uriBase.length);
  }
}

export const CATALOG_DDL = `
CREATE TABLE IF NOT EXISTS iceberg_tables (
  catalog_name varchar(255) not null,
  table_namespace varchar(255) not null,
  table_name varchar(255) not null,
  metadata_location varchar(1000),
  previous_metadata_location varchar(1000),
  iceberg_type varchar(5),
  primary key (catalog_name, table_namespace, table_name));
CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
  catalog_name varchar(255) not null,
  namespace varchar(255) not null,
  property_key varchar(255),
  property_value varchar(1000),
  primary key (catalog_name, namespace, property_key));
`;

/** An in-memory PGlite with the catalog tables, behind the SqlClient port. */
export async function pgliteClient(): Promise<{ sql: SqlClient; db: PGlite; close(): Promise<void> }> {
  const db = await PGlite.create();
  await db.exec(CATALOG_DDL);
  const sql: SqlClient = {
    async query<R>(text: string, params?: unknown[]) {
      const res = await db.query<R>(text, params as unknown[] | undefined);
      return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
    },
  };
  return { sql, db, close: () => db.close() };
}

/** Static files under `root` over loopback HTTP: GET, HEAD and single Range requests (206). */
export async function startStaticServer(root: string): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = join(root, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
      if (!path.startsWith(resolve(root))) {
        res.writeHead(403).end();
        return;
      }
      let size: number;
      try {
        const st = await stat(path);
        if (!st.isFile()) throw new Error('not a file');
        size = st.size;
      } catch {
        res.writeHead(404).end();
        return;
      }
      const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
      let start = 0;
      let end = size - 1;
      if (range) {
        if (range[1] === '') {
          start = Math.max(0, size - Number(range[2]));
        } else {
          start = Number(range[1]);
          if (range[2] !== '') end = Math.min(size - 1, Number(range[2]));
        }
      }
      const headers = { 'content-length': String(end - start + 1), 'accept-ranges': 'bytes', 'content-type': 'application/octet-stream' };
      if (range) res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${end}/${size}` });
      else res.writeHead(200, headers);
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      createReadStream(path, { start, end }).pipe(res);
    })();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}
