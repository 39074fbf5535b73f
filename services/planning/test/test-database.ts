// Test support: a fresh, migrated metadata database of either kind for the planning service.
// PGlite lives in a temporary directory; PostgreSQL gets a randomly named database on the server
// at FLOE_TEST_PG_URL (default: the local development server, trust auth), dropped afterwards.

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDb, type Db } from '@floe/meta';

export type Backend = 'pglite' | 'pg';

const ADMIN_URL = process.env['FLOE_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The database, with (PostgreSQL) its URL for a second, independent connection. */
export async function migratedDatabase(kind: Backend): Promise<{ db: Db; url?: string; drop(): Promise<void> }> {
  if (kind === 'pglite') {
    const dir = await mkdtemp(join(tmpdir(), 'floe-planning-test-'));
    const db = await openDb({ kind: 'pglite', dataDir: dir });
    await migrate(db);
    return {
      db,
      async drop() {
        await db.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  const name = `floe_planning_test_${randomBytes(6).toString('hex')}`;
  const admin = await openDb({ kind: 'pg', url: ADMIN_URL, poolMax: 1 });
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const db = await openDb({ kind: 'pg', url: url.toString(), poolMax: 4 });
  await migrate(db);
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
    },
  };
}
