/**
 * The writer's CPU per table commit when a round commits many small tables (many tenants, each
 * its own Iceberg table): `tables` tenants each append one request of bench/ingest-traces' body
 * (`spans` spans) to the WAL, then one Committer round commits them all, `commit_concurrency` at
 * a time, on an embedded catalog (PGlite) and a directory store, as `floe all` runs it (with
 * attribute type pins; not the per-round check of deleted datasets). After a
 * first round that creates the tables, `rounds` rounds are measured: process CPU (every thread:
 * the encoding thread, PGlite, libuv's pool) and wall time per commit.
 *
 * A table's metadata repeats every retained snapshot (compactor.snapshot_retention, 1 h), so a
 * commit's cost grows with them: with `history` above 0, each table is first aged to that many
 * snapshots (copies of its first commit's, with ids of their own, as a table committed to every
 * 10 s for an hour has 360), written as a new metadata version through the catalog.
 *
 *   node bench/writer-commits/run.ts [tables=500] [rounds=4] [spans=50] [concurrency=8] [history=0]
 *
 * With FLOE_BENCH_CPU_PROF=<file>, the main thread's CPU profile of the measured rounds alone is
 * written there (summarise it with bench/lib/cpu-profile-summary.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spansToPayloadsFromWire } from '@floe/acceptor';
import { floeNamespace, openFloeCatalog } from '@floe/iceberg';
import { migrate, openDb } from '@floe/meta';
import { FsObjectStore, newRecordId, ParquetWriter, WalAppender } from '@floe/storage';
import { AttributeTypePins, Committer } from '@floe/writer';
import { MarkedTemplate, ingestTracesBody } from '../lib/otlp-gen.ts';
import { ageTable } from '../lib/table-history.ts';

const TABLES = Number(process.argv[2] ?? 500);
const ROUNDS = Number(process.argv[3] ?? 4);
const SPANS = Number(process.argv[4] ?? 50);
const CONCURRENCY = Number(process.argv[5] ?? 8);
const HISTORY = Number(process.argv[6] ?? 0);

/** Warnings and errors to stderr (a bench run should have none); the rest dropped. */
const quietLog = { warn: console.warn, error: console.error, info() {}, debug() {}, trace() {}, child: () => quietLog };

const dir = mkdtempSync(join(tmpdir(), 'floe-bench-commits-'));
const db = await openDb({ kind: 'pglite', dataDir: join(dir, 'meta') });
await migrate(db);
const store = new FsObjectStore(join(dir, 'data'));
const catalog = openFloeCatalog(db, store);
const writer = new ParquetWriter(join(dir, 'work'));
const committer = new Committer({
  store,
  catalog,
  writer,
  log: quietLog as never,
  maxRowsPerFile: 1_000_000,
  commitConcurrency: CONCURRENCY,
  maxSegmentsPerRound: 10_000,
  // As the writer checks them (writer/start.ts).
  pins: new AttributeTypePins({ db, log: quietLog as never }),
});
const template = new MarkedTemplate(ingestTracesBody(SPANS), SPANS);

/** One request per tenant, appended as an acceptor appends it (one segment for the round). */
async function fillWal(): Promise<void> {
  const wal = new WalAppender(store, { instanceId: `bench-${newRecordId()}`, segmentMaxAgeMs: 3_600_000, maxBatchBytes: 1 << 30 });
  const appends: Promise<unknown>[] = [];
  for (let t = 0; t < TABLES; t++) {
    const converted = spansToPayloadsFromWire(template.next());
    const records = [...converted.byHour.values()].map((b) => ({ header: { tenant: `t${t}`, dataset: 'default', table: 'traces', hour: b.hour, rows: b.rows, id: newRecordId() }, payload: b.payload }));
    appends.push(wal.append(records));
  }
  await Promise.all(appends);
  await wal.close();
}

/** Each table given HISTORY snapshots before its current one (see the top). */
async function age(): Promise<void> {
  for (let t = 0; t < TABLES; t++) {
    const h = (await catalog.loadTable(floeNamespace(`t${t}`, 'default'), 'traces'))!;
    await ageTable(catalog, h, h.metadata.snapshots.length + HISTORY);
  }
}

try {
  await fillWal();
  const t0 = performance.now();
  const created = await committer.round();
  if (HISTORY > 0) await age();
  console.log(`bench/writer-commits: ${TABLES} tables${HISTORY > 0 ? ` of ${HISTORY} snapshots` : ''}, ${SPANS} spans each a round, ${CONCURRENCY} at a time; first round (creates the tables) ${created.commits} commits in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const perCommit: number[] = [];
  const profileTo = process.env.FLOE_BENCH_CPU_PROF;
  const session = profileTo ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
  }
  for (let r = 0; r < ROUNDS; r++) {
    await fillWal();
    await session?.post('Profiler.start');
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    const stats = await committer.round();
    const wall = performance.now() - wall0;
    const cpu = process.cpuUsage(cpu0);
    if (session) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(`${profileTo}.${r + 1}.cpuprofile`, JSON.stringify(profile));
    }
    const cpuMs = (cpu.user + cpu.system) / 1000 / stats.commits;
    perCommit.push(cpuMs);
    console.log(`  round ${r + 1}: ${stats.commits} commits, ${stats.rows} rows in ${(wall / 1000).toFixed(2)} s: ${cpuMs.toFixed(2)} CPU-ms per commit (user ${(cpu.user / 1000 / stats.commits).toFixed(2)}, system ${(cpu.system / 1000 / stats.commits).toFixed(2)}), ${(wall / stats.commits).toFixed(2)} ms wall per commit`);
  }
  const sorted = [...perCommit].sort((a, b) => a - b);
  console.log(`  median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} CPU-ms per commit over ${ROUNDS} rounds`);
} finally {
  writer.close();
  await store.close();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
