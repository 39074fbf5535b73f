// Test support (not exported from index.ts): a fresh, empty metadata database of either kind.
// PGlite lives in a temporary directory; PostgreSQL gets a randomly named database on the server
// at FLOE_TEST_PG_URL (default: the local development server, trust auth), dropped afterwards.

import { randomBytes } from 'node:crypto';
import { access, cp, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDb } from './db.ts';
import { migrate } from './migrations.ts';
import type { Db, DbConfig } from './db.ts';

export const BACKENDS = ['pglite', 'pg'] as const;
export type Backend = (typeof BACKENDS)[number];

const ADMIN_URL = process.env['FLOE_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

// PGlite's initdb costs seconds; a fresh database is a copy of an initialised data directory
// (opening an existing directory costs ~0.3 s, reference/storage.md §5). The template is a cache
// shared by test processes and runs, keyed by the PGlite version, built once and moved into place
// atomically (a process that loses the race discards its copy).
let pgliteTemplate: Promise<string> | undefined;

async function buildPgliteTemplate(): Promise<string> {
  const pkg = new URL('../package.json', import.meta.resolve('@electric-sql/pglite'));
  const { version } = JSON.parse(await readFile(pkg, 'utf8')) as { version: string };
  const target = join(tmpdir(), `floe-meta-test-pglite-template-${version}`);
  try {
    await access(join(target, 'PG_VERSION'));
    return target;
  } catch {
    // not built yet
  }
  const staging = await mkdtemp(join(tmpdir(), 'floe-meta-test-pglite-staging-'));
  const db = await openDb({ kind: 'pglite', dataDir: staging });
  await db.close();
  try {
    await rename(staging, target);
  } catch {
    await rm(staging, { recursive: true, force: true }); // another process won
  }
  return target;
}

function pgliteTemplateDir(): Promise<string> {
  pgliteTemplate ??= buildPgliteTemplate();
  return pgliteTemplate;
}

export interface TestDatabase {
  readonly db: Db;
  /** Config of the same database, to open more handles (pg: separate pools, like separate processes). */
  readonly config: DbConfig;
  /** Opens another handle (PGlite: returns the one handle); closed by drop(). */
  open(): Promise<Db>;
  /** Closes every handle and removes the database. */
  drop(): Promise<void>;
}

export async function createTestDatabase(kind: Backend): Promise<TestDatabase> {
  const handles: Db[] = [];
  let cleanup: () => Promise<void>;
  let config: DbConfig;
  if (kind === 'pglite') {
    const template = await pgliteTemplateDir();
    const dir = await mkdtemp(join(tmpdir(), 'floe-meta-test-'));
    await cp(template, dir, { recursive: true });
    config = { kind: 'pglite', dataDir: dir };
    cleanup = () => rm(dir, { recursive: true, force: true });
  } else {
    const name = `floe_meta_test_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    config = { kind: 'pg', url: url.toString(), poolMax: 4 };
    cleanup = async () => {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    };
  }
  const cfg = config;
  const open = async (): Promise<Db> => {
    // A PGlite directory has exactly one owner (two instances on one directory would corrupt it):
    // "another handle" is the same one, as for every caller in an embedded process.
    if (cfg.kind === 'pglite' && handles[0]) return handles[0];
    const db = await openDb(cfg);
    handles.push(db);
    return db;
  };
  const db = await open();
  return {
    db,
    config: cfg,
    open,
    async drop() {
      for (const h of handles) await h.close();
      await cleanup();
    },
  };
}

/** A fresh database with every migration applied, for tests of what lives in the schema. */
export async function createMigratedTestDatabase(kind: Backend): Promise<TestDatabase> {
  const t = await createTestDatabase(kind);
  try {
    await migrate(t.db);
  } catch (err) {
    await t.drop();
    throw err;
  }
  return t;
}
