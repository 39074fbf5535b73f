import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapTenant, openDb, type Db } from '@floe/meta';
import type { Actor } from '../src/store/actor.ts';
import { addComment } from '../src/store/comments.ts';
import { createFeature, deleteFeature, updateFeature } from '../src/store/features.ts';
import { createProduct } from '../src/store/products.ts';
import { createPhase, deletePhase, updatePhase } from '../src/store/release-phases.ts';
import { createRelease } from '../src/store/releases.ts';
import { createRequirement } from '../src/store/requirements.ts';
import { createToDo } from '../src/store/to-dos.ts';
import { migratedDatabase, type Backend } from './test-database.ts';

/**
 * A route looks a record up, then writes under it; a concurrent DELETE may remove it in between.
 * The repositories then answer not found (404), as a request after the DELETE gets, never a
 * TypeError or a foreign key violation (500). The interleaving is forced here by deleting
 * between the lookup (done by hand) and the write.
 */
describe.each<Backend>(['pglite', 'pg'])('a record deleted after the route found it (%s)', (backend) => {
  let database: { db: Db; drop(): Promise<void> };
  let actor: Actor;
  let release: { id: string; productId: string };

  beforeAll(async () => {
    database = await migratedDatabase(backend);
    await bootstrapTenant(database.db, 'acme');
    actor = { tenantId: 'acme', userId: null, keyId: null };
    const product = await createProduct(database.db, actor, { name: 'Checkout', referencePrefix: 'PRJ1' });
    release = { id: (await createRelease(database.db, actor, product.id, { name: 'Q3' })).id, productId: product.id };
  });
  afterAll(async () => {
    await database?.drop();
  });

  const deletedFeature = async () => {
    const feature = await createFeature(database.db, actor, release, { name: 'Gone soon' });
    await deleteFeature(database.db, actor.tenantId, feature.id);
    return { id: feature.id, productId: release.productId };
  };

  it('adding a requirement to a deleted feature is not found', async () => {
    const feature = await deletedFeature();
    await expect(createRequirement(database.db, actor, feature, { name: 'Too late' })).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('adding a to-do to a deleted feature is not found', async () => {
    const feature = await deletedFeature();
    await expect(createToDo(database.db, actor.tenantId, feature.id, { name: 'Too late' })).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('updating a deleted release phase is not found', async () => {
    const phase = await createPhase(database.db, actor.tenantId, release.id, { name: 'Beta' });
    await deletePhase(database.db, actor.tenantId, phase.id);
    await expect(updatePhase(database.db, actor.tenantId, phase.id, { name: 'Too late' })).rejects.toMatchObject({ kind: 'not_found' });
  });
});

/** `db` with `before(sql)` run ahead of each statement, in and out of transactions. */
function interposed(db: Db, before: (sql: string) => Promise<void>): Db {
  return {
    kind: db.kind,
    query: async (sql, params) => {
      await before(sql);
      return db.query(sql, params);
    },
    exec: (sql) => db.exec(sql),
    withTransaction: (fn) => db.withTransaction((tx) => fn(interposed(tx, before))),
    close: () => db.close(),
  };
}

// PostgreSQL only: the phase is deleted on a second connection while the feature's transaction is
// open (PGlite has one connection, which the transaction holds).
describe('a release phase deleted while a feature is being put in it (pg)', () => {
  let database: { db: Db; url?: string; drop(): Promise<void> };
  let other: Db;
  const actor: Actor = { tenantId: 'acme', userId: null, keyId: null };

  beforeAll(async () => {
    database = await migratedDatabase('pg');
    other = await openDb({ kind: 'pg', url: database.url!, poolMax: 1 });
    await bootstrapTenant(database.db, 'acme');
  });
  afterAll(async () => {
    await other?.close();
    await database?.drop();
  });

  it('is a phase that does not exist (bad_data), not a foreign key violation', async () => {
    const db = database.db;
    const product = await createProduct(db, actor, { name: 'Checkout', referencePrefix: 'PRJ1' });
    const release = { id: (await createRelease(db, actor, product.id, { name: 'Q3' })).id, productId: product.id };
    const feature = await createFeature(db, actor, release, { name: 'Apple Pay' });
    const phase = await createPhase(db, actor.tenantId, release.id, { name: 'Beta' });
    let deleted = false;
    const racing = interposed(db, async (sql) => {
      if (deleted || !sql.includes('SET release_phase_id = $3')) return;
      deleted = true;
      await deletePhase(other, actor.tenantId, phase.id);
    });
    await expect(updateFeature(racing, actor, feature.id, { release_phase: phase.id })).rejects.toMatchObject({ kind: 'bad_data', message: `release_phase: no phase "${phase.id}" in the feature's release` });
    expect(deleted).toBe(true);
  });

  it('a comment written while its feature is deleted goes with the feature (no comment outlives its parent)', async () => {
    const db = database.db;
    const product = await createProduct(db, actor, { name: 'Wallet', referencePrefix: 'PRJ2' });
    const release = { id: (await createRelease(db, actor, product.id, { name: 'Q4' })).id, productId: product.id };
    const feature = await createFeature(db, actor, release, { name: 'Gone with its comments' });
    const second = await createFeature(db, actor, release, { name: 'Gone with its requirement' });
    const requirement = await createRequirement(db, actor, { id: second.id, productId: release.productId }, { name: 'Its requirement' });
    for (const [again, target] of [
      [feature, { kind: 'feature' as const, id: feature.id }],
      [second, { kind: 'requirement' as const, id: requirement.id }],
    ] as const) {
      let deleting: Promise<void> | undefined;
      // The delete starts on another connection just before the comment is written, and is given
      // time to reach the feature (it waits for the comment's transaction, or without the lock
      // would finish first); either way the comment must not be left behind.
      const racing = interposed(db, async (sql) => {
        if (deleting || !sql.startsWith('INSERT INTO planning_comments')) return;
        deleting = deleteFeature(other, actor.tenantId, again.id);
        await new Promise((r) => setTimeout(r, 300));
      });
      await addComment(racing, actor, target, 'written during the delete').catch((err: unknown) => expect(err).toMatchObject({ kind: 'not_found' }));
      await deleting;
      const left = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM planning_comments WHERE tenant_id = $1 AND parent_kind = $2 AND parent_id = $3`, [actor.tenantId, target.kind, target.id]);
      expect(left.rows[0]!.n, target.kind).toBe('0');
    }
  });
});
