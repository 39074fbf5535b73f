import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb } from './index.ts';
import type { Db } from './index.ts';
import { BACKENDS, createMigratedTestDatabase } from './test-databases.ts';
import type { TestDatabase } from './test-databases.ts';

describe.each(BACKENDS)('Db adapter on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
    await db.exec(`
      CREATE TABLE probe (id int PRIMARY KEY, v int8, label text);
      CREATE TABLE probe_tx (id int PRIMARY KEY);
    `);
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('reports its kind', () => {
    expect(db.kind).toBe(kind);
  });

  it('returns int8 and int8[] as decimal strings, beyond 2^53 too', async () => {
    const { rows } = await db.query<{ big: unknown; max: unknown; arr: unknown; n: unknown; i4: unknown; num: unknown }>(
      `SELECT 9007199254740993::int8 AS big, 9223372036854775807::int8 AS max,
              ARRAY[9007199254740993, NULL, -5]::int8[] AS arr, count(*) AS n,
              42::int4 AS i4, 1.5::numeric AS num
       FROM generate_series(1, 3)`,
    );
    expect(rows).toEqual([
      { big: '9007199254740993', max: '9223372036854775807', arr: ['9007199254740993', null, '-5'], n: '3', i4: 42, num: '1.5' },
    ]);
  });

  it('round-trips an Iceberg snapshot id through an int8 column, also inside a transaction', async () => {
    const snapshotId = '8744736658442914487';
    await db.query('INSERT INTO probe (id, v) VALUES ($1, $2)', [1, snapshotId]);
    const viaRoot = await db.query<{ v: string }>('SELECT v FROM probe WHERE id = 1');
    const viaTx = await db.withTransaction((tx) => tx.query<{ v: string }>('SELECT v FROM probe WHERE id = 1'));
    expect(viaRoot.rows[0]?.v).toBe(snapshotId);
    expect(viaTx.rows[0]?.v).toBe(snapshotId);
  });

  it.each([
    ['INSERT of 3 rows', `INSERT INTO probe (id, label) VALUES (10, 'a'), (11, 'b'), (12, 'c')`, 3, 0],
    ['SELECT of 3 rows', `SELECT id FROM probe WHERE id BETWEEN 10 AND 12`, 3, 3],
    ['UPDATE matching 2', `UPDATE probe SET label = 'x' WHERE id IN (10, 11)`, 2, 0],
    ['UPDATE … RETURNING matching 1', `UPDATE probe SET label = 'y' WHERE id = 12 RETURNING id`, 1, 1],
    ['UPDATE matching none', `UPDATE probe SET label = 'z' WHERE id = -1`, 0, 0],
    ['DELETE matching 3', `DELETE FROM probe WHERE id BETWEEN 10 AND 12`, 3, 0],
    ['DDL', `CREATE INDEX IF NOT EXISTS probe_label ON probe (label)`, 0, 0],
  ])('normalises rowCount: %s', async (_name, sql, rowCount, rows) => {
    const res = await db.query(sql);
    expect(res.rowCount).toBe(rowCount);
    expect(res.rows).toHaveLength(rows);
  });

  it('exec runs a multi-statement script', async () => {
    await db.exec(`INSERT INTO probe (id, label) VALUES (20, 'e1'); INSERT INTO probe (id, label) VALUES (21, 'e2');`);
    const { rows } = await db.query<{ label: string }>('SELECT label FROM probe WHERE id IN (20, 21) ORDER BY id');
    expect(rows.map((r) => r.label)).toEqual(['e1', 'e2']);
  });

  it('withTransaction commits and returns the callback result', async () => {
    const result = await db.withTransaction(async (tx) => {
      await tx.query('INSERT INTO probe_tx (id) VALUES (1), (2)');
      return 'done';
    });
    expect(result).toBe('done');
    expect((await db.query('SELECT id FROM probe_tx WHERE id IN (1, 2)')).rowCount).toBe(2);
  });

  it('withTransaction rolls back and rethrows when the callback throws', async () => {
    const boom = new Error('boom');
    await expect(
      db.withTransaction(async (tx) => {
        await tx.query('INSERT INTO probe_tx (id) VALUES (100)');
        expect((await tx.query('SELECT 1 FROM probe_tx WHERE id = 100')).rowCount).toBe(1);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect((await db.query('SELECT 1 FROM probe_tx WHERE id = 100')).rowCount).toBe(0);
  });

  it('nests with savepoints: an inner failure rolls back only the inner part', async () => {
    await db.withTransaction(async (tx) => {
      await tx.query('INSERT INTO probe_tx (id) VALUES (200)');
      await expect(
        tx.withTransaction(async (inner) => {
          await inner.query('INSERT INTO probe_tx (id) VALUES (201)');
          throw new Error('inner');
        }),
      ).rejects.toThrow('inner');
      await tx.withTransaction((inner) => inner.query('INSERT INTO probe_tx (id) VALUES (202)'));
    });
    const { rows } = await db.query<{ id: number }>('SELECT id FROM probe_tx WHERE id >= 200 ORDER BY id');
    expect(rows.map((r) => r.id)).toEqual([200, 202]);
  });

  it('refuses to commit a transaction aborted by a swallowed error', async () => {
    await expect(
      db.withTransaction(async (tx) => {
        await tx.query('INSERT INTO probe_tx (id) VALUES (300)');
        await tx.query('INSERT INTO probe_tx (id) VALUES (300)').catch(() => undefined); // duplicate key
        return 'looks fine';
      }),
    ).rejects.toThrow();
    expect((await db.query('SELECT 1 FROM probe_tx WHERE id = 300')).rowCount).toBe(0);
  });

  it('throws instead of deadlocking when the root handle is used inside its own transaction', async () => {
    await expect(db.withTransaction(() => db.query('SELECT 1'))).rejects.toThrow(/use the tx handle/);
    // The root handle works again afterwards.
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('rejects a transaction handle used after its transaction ended', async () => {
    let leaked: Db | undefined;
    await db.withTransaction(async (tx) => {
      leaked = tx;
    });
    await expect(leaked!.query('SELECT 1')).rejects.toThrow(/after its transaction ended/);
  });

  it('isolates concurrent transactions from each other', async () => {
    await Promise.all(
      [400, 401, 402, 403].map((id) =>
        db.withTransaction(async (tx) => {
          await tx.query('INSERT INTO probe_tx (id) VALUES ($1)', [id]);
          if (id % 2 === 1) throw new Error('odd');
        }).catch(() => undefined),
      ),
    );
    const { rows } = await db.query<{ id: number }>('SELECT id FROM probe_tx WHERE id >= 400 ORDER BY id');
    expect(rows.map((r) => r.id)).toEqual([400, 402]);
  });

  it('has a write generation only as the one writer (PGlite): writes, scripts and transactions move it, reads do not', async () => {
    if (kind === 'pg') {
      expect(db.writeGeneration).toBeUndefined();
      return;
    }
    const at = () => db.writeGeneration!();
    const g0 = at();
    await db.query('SELECT id FROM probe');
    await db.query('  select 1');
    expect(at()).toBe(g0);
    // Moved at the start of a write already, so a read racing it is not kept as current.
    const pending = db.query('INSERT INTO probe (id, v, label) VALUES (900, 1, $1)', ['gen']);
    expect(at()).not.toBe(g0);
    await pending;
    const g1 = at();
    await db.exec('UPDATE probe SET v = 2 WHERE id = 900');
    const g2 = at();
    expect(g2).not.toBe(g1);
    await db.withTransaction((tx) => tx.query('DELETE FROM probe WHERE id = 900'));
    expect(at()).not.toBe(g2);
    const g3 = at();
    await db.withTransaction((tx) => tx.query('SELECT 1'));
    expect(at()).not.toBe(g3);
  });

  it('passes text[] and jsonb parameters and parses them back', async () => {
    const { rows } = await db.query<{ a: string[]; j: unknown }>('SELECT $1::text[] AS a, $2::jsonb AS j', [
      ['ingest', 'tenant:manage'],
      JSON.stringify({ retention: { days: 7 } }),
    ]);
    expect(rows).toEqual([{ a: ['ingest', 'tenant:manage'], j: { retention: { days: 7 } } }]);
  });

  describe('iceberg_tables compare-and-swap commit', () => {
    const key = ['floe', 'acme.default', 'logs'];

    beforeAll(async () => {
      await db.query(
        `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location, iceberg_type)
         VALUES ($1, $2, $3, $4, NULL, 'TABLE')`,
        [...key, 's3://b/acme/logs/metadata/00000-a.metadata.json'],
      );
    });

    const cas = (from: string, to: string) =>
      db.query(
        `UPDATE iceberg_tables SET metadata_location = $4, previous_metadata_location = $5
         WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3 AND metadata_location = $5`,
        [...key, to, from],
      );

    it('updates one row when the expected location is current, none when it is stale', async () => {
      const v0 = 's3://b/acme/logs/metadata/00000-a.metadata.json';
      const v1 = 's3://b/acme/logs/metadata/00001-b.metadata.json';
      const v1b = 's3://b/acme/logs/metadata/00001-c.metadata.json';
      expect((await cas(v0, v1)).rowCount).toBe(1);
      expect((await cas(v0, v1b)).rowCount).toBe(0); // a concurrent writer lost the race
      const { rows } = await db.query(
        'SELECT metadata_location, previous_metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3',
        key,
      );
      expect(rows).toEqual([{ metadata_location: v1, previous_metadata_location: v0 }]);
    });
  });
});

describe('openDb', () => {
  it('fails fast on an unreachable PostgreSQL', async () => {
    await expect(openDb({ kind: 'pg', url: 'postgres://postgres@127.0.0.1:1/nope' })).rejects.toThrow();
  });

  it('opens an in-memory PGlite', async () => {
    const db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    try {
      expect((await db.query<{ v: string }>('SELECT 1::int8 AS v')).rows).toEqual([{ v: '1' }]);
    } finally {
      await db.close();
    }
  });
});
