/**
 * bench/open-hours: what the compactor's open-hour pass (Compactor.concatOpenHours, every
 * compactor.open_hour_interval, 15 s) costs when a catalog holds many tables and few are being
 * written: the pass as it is (idle tables left alone while their pointer stays, IdleTables)
 * against the pass that loads every table's metadata and manifests (skipIdleOpenHours: false),
 * measured in the same run over the same tables.
 *
 *   node bench/open-hours/run.ts [tables=300] [activeTables=5] [passes=6] [history=30] [cache=256]
 *
 * Setup, on an embedded catalog (PGlite) and a directory store as `floe all` runs them: `tables`
 * traces tables (tenant t<i>, dataset default), each with:
 * FILES flush files (Parquet written by the writer's encoder from the compactor tests' span rows)
 * in an hour closed hours ago, each its own commit, then aged to `history` retained snapshots as
 * bench/writer-commits ages its tables (copies of the current snapshot: the metadata JSON a
 * table committed to every 10 s carries). Two compactors, each with
 * its own catalog instance (metadata LRU of `cache` tables: the catalog's default is 256) over
 * one counting SQL client and store, make one full pass each (the open-hour passes visit only
 * tables a full pass found sound). Then `passes` rounds: before each compactor's pass,
 * `activeTables` tables get two new flush files of equal size (the writer's commits) in an hour
 * still open, a new one each pass so that every pass has the same concatenations to do, which
 * that pass makes (its clock runs a minute ahead so the files are old enough); the order of the
 * two compactors alternates by round.
 *
 * Printed per pass and mode: wall ms (p50, max), process CPU ms (p50; every thread), SQL queries,
 * object-store reads and bytes read (the catalog's metadata and manifests, the flush files'
 * footers), tables loaded and left idle, groups merged; then the ratios baseline / idle-skipping.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Compactor } from '@floe/compactor';
import { ensureFloeTable, FLOE_CATALOG_NAME, FLOE_WAREHOUSE_PREFIX, openFloeCatalog, publishDataFile, SqlCatalog, type TableHandle } from '@floe/iceberg';
import { migrate, openDb, type Db } from '@floe/meta';
import { tableDef } from '@floe/schema';
import { FsObjectStore, LocalFileCache, ParquetWriter, type ObjectStore, type WrittenFile } from '@floe/storage';
import { median } from '../lib/floe-process.ts';
import { ageTable } from '../lib/table-history.ts';
import { spansOfHour } from '../lib/trace-gen.ts';

const TABLES = Number(process.argv[2] ?? 300);
const ACTIVE = Number(process.argv[3] ?? 5);
const PASSES = Number(process.argv[4] ?? 6);
const HISTORY = Number(process.argv[5] ?? 30);
const CACHE = Number(process.argv[6] ?? 256);
/** Flush files each table has in its closed hour. */
const FILES = 3;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Warnings and errors to stderr (a bench run should have none); the rest dropped. */
const quietLog = { warn: console.warn, error: console.error, info() {}, debug() {}, trace() {}, child: () => quietLog };

/** What the measured compactors asked of the metadata DB and the object store. */
const io = { queries: 0, reads: 0, bytes: 0 };

/** The metadata DB as the compactors see it: every query counted, the write generation kept (PGlite's pointer cache). */
function countingSql(db: Db): Db {
  return new Proxy(db, {
    get(target, key) {
      if (key === 'query') {
        return (text: string, params?: unknown[]) => {
          io.queries++;
          return target.query(text, params);
        };
      }
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** The object store as the compactors see it: reads counted with their bytes, listings and heads as reads. */
function countingStore(store: ObjectStore): ObjectStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'get') {
        return async (k: string, alloc?: (bytes: number) => Uint8Array) => {
          const body = await target.get(k, alloc);
          io.reads++;
          io.bytes += body?.byteLength ?? 0;
          return body;
        };
      }
      if (key === 'getRange') {
        return async (k: string, offset: number, length: number) => {
          const body = await target.getRange(k, offset, length);
          io.reads++;
          io.bytes += body.byteLength;
          return body;
        };
      }
      if (key === 'list' || key === 'listPrefixes' || key === 'head') {
        return (k: string) => {
          io.reads++;
          return (target[key] as (k: string) => Promise<unknown>)(k);
        };
      }
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const dir = mkdtempSync(join(tmpdir(), 'floe-bench-open-hours-'));
const db = await openDb({ kind: 'pglite', dataDir: join(dir, 'meta') });
await migrate(db);
const store = new FsObjectStore(join(dir, 'data'));
/** The writer's catalog: creates the tables and commits their flush files. */
const writerCatalog = openFloeCatalog(db, store);
const encoder = new ParquetWriter(join(dir, 'encode'));
const def = tableDef('traces');
const openHour = Math.floor(Date.now() / HOUR_MS);
const closedHour = openHour - 3;

/** Flush files written once and published into every table that gets one (the store copies them). */
const encodeFlushes = (hour: number, seeds: number[]): Promise<WrittenFile[]> => Promise.all(seeds.map(() => encoder.writeQuery(def, spansOfHour(hour, 200))));

async function commitFlushes(handle: TableHandle, files: WrittenFile[], hour: number): Promise<TableHandle> {
  const tableKey = store.keyFromUri(handle.metadata.location);
  for (const w of files) handle = (await writerCatalog.appendFiles(handle, [await publishDataFile(store, def, w, tableKey, hour)], { summary: { 'floe.writer': 'bench' } })).handle;
  return handle;
}

function compactor(name: string, skipIdleOpenHours: boolean) {
  const sql = countingSql(db);
  const counted = countingStore(store);
  const catalog = new SqlCatalog(sql, counted, { catalogName: FLOE_CATALOG_NAME, warehouseKeyPrefix: FLOE_WAREHOUSE_PREFIX, metadataCacheSize: CACHE });
  const work = join(dir, name);
  const writer = new ParquetWriter(join(work, 'work'));
  const openHourWriter = new ParquetWriter(join(work, 'concat'), { threads: 1 });
  const cache = new LocalFileCache({ dir: join(work, 'cache'), maxBytes: 0 });
  const c = new Compactor({
    catalog,
    store: counted,
    writer,
    openHourWriter,
    cache,
    log: quietLog as never,
    targetFileBytes: 128 * 1024 * 1024,
    // Nothing expires, and the full pass sorts no closed hour: the tables keep the shape set up.
    snapshotRetentionMs: DAY_MS,
    minFileAgeMs: DAY_MS,
    openHourAgeMs: 15_000,
    skipIdleOpenHours,
    // A minute ahead of the commits: the flush files just committed are old enough to concatenate.
    now: () => Date.now() + 60_000,
  });
  return { name, c, close: async () => (writer.close(), openHourWriter.close(), await cache.close()) };
}

interface Sample {
  wallMs: number;
  cpuMs: number;
  queries: number;
  reads: number;
  bytes: number;
  loaded: number;
  idle: number;
  groups: number;
}

try {
  const t0 = performance.now();
  const closedFiles = await encodeFlushes(closedHour, Array.from({ length: FILES }, (_, i) => i + 1));
  const handles: TableHandle[] = [];
  for (let t = 0; t < TABLES; t++) {
    let h = await commitFlushes(await ensureFloeTable(writerCatalog, `t${t}`, 'default', 'traces'), closedFiles, closedHour);
    handles.push(await ageTable(writerCatalog, h, HISTORY));
  }
  const setupS = (performance.now() - t0) / 1000;
  const metadataBytes = (await store.get(store.keyFromUri(handles[0]!.metadataLocation)))!.byteLength;

  const modes = [compactor('baseline', false), compactor('idle-skip', true)];
  const t1 = performance.now();
  for (const m of modes) {
    const full = await m.c.pass();
    if (full.failedTables > 0) throw new Error(`${m.name}: ${full.failedTables} tables failed the full pass`);
  }
  console.log(
    `bench/open-hours: ${TABLES} tables of ${HISTORY} snapshots (metadata ${(metadataBytes / 1024).toFixed(1)} KiB, ${FILES} files in a closed hour), ${ACTIVE} active (2 flush files before each pass), metadata LRU ${CACHE} tables; setup ${setupS.toFixed(1)} s, full passes ${((performance.now() - t1) / 1000).toFixed(1)} s`,
  );

  const samples = new Map<string, Sample[]>(modes.map((m) => [m.name, []]));
  let pass = 0;
  for (let r = 0; r < PASSES; r++) {
    for (const m of r % 2 === 0 ? modes : [...modes].reverse()) {
      // The writer's commits since the last pass: two flush files in each active table, in an hour
      // of their own (open: not yet over), so every pass of either mode has the same merges to do
      // (in one hour, size tiers made them vary from pass to pass).
      const hour = openHour + 1 + pass++;
      const flushes = await encodeFlushes(hour, [1000 + pass, 1000 + pass]);
      for (let t = 0; t < ACTIVE; t++) {
        const i = Math.floor((t * TABLES) / ACTIVE);
        handles[i] = await commitFlushes((await writerCatalog.loadTable(`t${i}.default`, 'traces'))!, flushes, hour);
      }
      await Promise.all(flushes.map((w) => rm(w.path, { force: true })));
      const before = { ...io };
      const cpu0 = process.cpuUsage();
      const wall0 = performance.now();
      const s = await m.c.concatOpenHours();
      const wallMs = performance.now() - wall0;
      const cpu = process.cpuUsage(cpu0);
      if (s.failures > 0) throw new Error(`${m.name}: ${s.failures} failures in an open-hour pass`);
      samples.get(m.name)!.push({
        wallMs,
        cpuMs: (cpu.user + cpu.system) / 1000,
        queries: io.queries - before.queries,
        reads: io.reads - before.reads,
        bytes: io.bytes - before.bytes,
        loaded: s.tablesLoaded,
        idle: s.tablesIdle,
        groups: s.groups,
      });
    }
  }

  const summary = (name: string) => {
    const xs = samples.get(name)!;
    const med = (k: keyof Sample) => median(xs.map((x) => x[k]));
    return { wallP50: med('wallMs'), wallMax: Math.max(...xs.map((x) => x.wallMs)), cpuP50: med('cpuMs'), queries: med('queries'), reads: med('reads'), bytes: med('bytes'), loaded: med('loaded'), idle: med('idle'), groups: med('groups') };
  };
  const out = Object.fromEntries(modes.map((m) => [m.name, summary(m.name)]));
  for (const m of modes) {
    const s = out[m.name]!;
    console.log(
      `  ${m.name.padEnd(9)} per pass (p50 of ${PASSES}): ${s.wallP50.toFixed(1)} ms wall (max ${s.wallMax.toFixed(1)}), ${s.cpuP50.toFixed(1)} CPU-ms, ${s.queries} SQL queries, ${s.reads} store reads of ${(s.bytes / 1024).toFixed(1)} KiB; ${s.loaded} tables loaded, ${s.idle} idle, ${s.groups} groups merged`,
    );
    // The first pass of each mode loads every table (nothing is known idle yet).
    console.log(`    wall ms by pass: ${samples.get(m.name)!.map((x) => x.wallMs.toFixed(0)).join(' ')}`);
  }
  const a = out.baseline!;
  const b = out['idle-skip']!;
  const ratio = (x: number, y: number) => (y > 0 ? `${(x / y).toFixed(1)}x` : 'n/a');
  console.log(`  baseline / idle-skip: wall p50 ${ratio(a.wallP50, b.wallP50)}, CPU p50 ${ratio(a.cpuP50, b.cpuP50)}, SQL queries ${ratio(a.queries, b.queries)}, store reads ${ratio(a.reads, b.reads)}, bytes read ${ratio(a.bytes, b.bytes)}`);
  for (const m of modes) await m.close();
} finally {
  encoder.close();
  await store.close();
  await db.close();
  await rm(dir, { recursive: true, force: true }).catch(() => rmSync(dir, { recursive: true, force: true }));
}
