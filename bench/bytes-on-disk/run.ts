/**
 * bench/bytes-on-disk: what a span, a log record and a metric sample cost on disk in Floe, beside
 * their raw OTLP protobuf size and, for samples, beside a real Prometheus's TSDB for the same
 * samples (same remote-write stream, same run).
 *
 *   node bench/bytes-on-disk/run.ts [N=1000000]
 *
 * Floe (`floe all`, compactor every 10 s) receives N spans (OTLP HTTP protobuf, 100 per request,
 * traces of 10 spans), N log records (100 per request) and about N samples over remote write
 * (ceil(N / 730) series scraped every 15 s for 730 scrapes: 3 h 2 min of data ending before now,
 * starting on a 2-hour boundary). Every id, time, path and duration differs between requests, so
 * nothing compresses better than real data would. Then the benchmark waits until the WAL is
 * drained (committed) and a compaction pass has started more than the compactor's minimum file age
 * (services/compactor/src/compact.ts MIN_FILE_AGE_MS, 60 s) after the last commit and finished,
 * stops Floe and reads the catalog: the writer's commits (append snapshots: added files, bytes,
 * rows) and the live files of the current snapshot after compaction, with the traces' id blocks
 * (*.blk) and id filters (*.idx) beside them.
 *
 * Prometheus (Debian package, remote-write receiver, default 2 h blocks) receives the same
 * samples; once the head spans more than 3 h it compacts the first 2 h into a block, whose size
 * per sample (meta.json numSamples) is printed, and a TSDB snapshot (admin API, head included)
 * gives the size of all of them in block form.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '@floe/config';
import { floeNamespace, openFloeCatalog, type PlannedFile } from '@floe/iceberg';
import { openDbFromConfig } from '@floe/meta';
import { ExportMetricsServiceRequestSchema, create, toBinary } from '@floe/proto';
import { FsObjectStore, objectStoreFromConfig } from '@floe/storage';
import { drive, fmt, loadAverage } from '../lib/drive.ts';
import { startFloeProcess, type FloeProcess } from '../lib/floe-process.ts';
import { MarkedTemplate, logsBody, spansBody } from '../lib/otlp-gen.ts';
import { duBytes, promMetric, startPrometheusReceiver, tsdbBlocks } from '../lib/prometheus-process.ts';
import { REMOTE_WRITE_HEADERS, RemoteWriteStream, scrapeOffsetMs, type SeriesDef } from '../lib/remote-write-stream.ts';
import { WalBacklog } from '../lib/wal-backlog.ts';

const N = Number(process.argv[2] ?? 1_000_000);
const BATCH = 100;
const CONCURRENCY = 8;
const WAVES = 4;
const ROUNDS = 730;
const INTERVAL_MS = 15_000;
const SERIES = Math.ceil(N / ROUNDS);
const TWO_HOURS = 7_200_000;
const T0 = Math.floor((Date.now() - 3.1 * 3_600_000) / TWO_HOURS) * TWO_HOURS;
const COMPACTOR_INTERVAL_S = 10;
const MIN_FILE_AGE_MS = 60_000; // services/compactor/src/compact.ts

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const newStream = () => new RemoteWriteStream({ series: SERIES, shards: CONCURRENCY, perRequest: 500, t0Ms: T0, intervalMs: INTERVAL_MS, rounds: ROUNDS });

/** The same samples as OTLP metrics, as an SDK would export one scrape: a resource per instance, a metric per name. */
function otlpBytesPerSample(series: SeriesDef[]): number {
  const byInstance = new Map<number, SeriesDef[]>();
  for (const s of series) byInstance.set(s.instance, [...(byInstance.get(s.instance) ?? []), s]);
  const str = (value: string) => ({ value: { case: 'stringValue' as const, value } });
  const resourceMetrics = [...byInstance].map(([inst, list]) => {
    const byName = new Map<string, SeriesDef[]>();
    for (const s of list) byName.set(s.metric, [...(byName.get(s.metric) ?? []), s]);
    const instance = list[0]!.labels.find(([k]) => k === 'instance')![1];
    const ts = BigInt(T0 + scrapeOffsetMs(inst, INTERVAL_MS)) * 1_000_000n;
    const metrics = [...byName].map(([name, members]) => {
      const dataPoints = members.map((s) => ({
        attributes: s.labels.filter(([k]) => k !== '__name__' && k !== 'job' && k !== 'instance').map(([key, v]) => ({ key, value: str(v) })),
        startTimeUnixNano: s.counter ? ts - 3_600_000_000_000n : 0n,
        timeUnixNano: ts,
        value: { case: 'asDouble' as const, value: s.value(0) },
      }));
      return { name, data: members[0]!.counter ? { case: 'sum' as const, value: { dataPoints, aggregationTemporality: 2, isMonotonic: true } } : { case: 'gauge' as const, value: { dataPoints } } };
    });
    return { resource: { attributes: [{ key: 'service.name', value: str(list[0]!.job) }, { key: 'service.instance.id', value: str(instance) }] }, scopeMetrics: [{ scope: { name: 'bench' }, metrics }] };
  });
  return toBinary(ExportMetricsServiceRequestSchema, create(ExportMetricsServiceRequestSchema, { resourceMetrics })).length / series.length;
}

/** Sends `total` items of OTLP (`body(seq)` makes request seq) to Floe in WAVES waves, 3 s apart (several writer flushes per hour). */
async function sendOtlp(url: string, headers: Record<string, string>, total: number, body: (seq: number) => Buffer): Promise<{ items: number; rawBytes: number; errors: number; firstError?: string | undefined }> {
  const requests = Math.ceil(total / BATCH);
  let seq = 0;
  let rawBytes = 0;
  let items = 0;
  let errors = 0;
  let firstError: string | undefined;
  for (let w = 0; w < WAVES; w++) {
    const end = Math.ceil(((w + 1) * requests) / WAVES);
    const r = await drive({
      url,
      headers,
      seconds: 3600,
      concurrency: CONCURRENCY,
      next: () => {
        if (seq >= end) return undefined;
        const b = body(seq++);
        rawBytes += b.length;
        return { body: b, items: BATCH };
      },
    });
    items += r.items;
    errors += r.errors;
    firstError ??= r.firstError;
    if (w < WAVES - 1) await sleep(3000);
  }
  return { items, rawBytes, errors, firstError };
}

interface PassLine {
  end: number;
  start: number;
  filesBefore: number;
  filesAfter: number;
  bytesBefore: number;
  bytesAfter: number;
  rowsRewritten: number;
  failedGroups: number;
}

/** The compactor's 'compaction pass' lines (info, one per pass that had work or failures) and its group failures. */
function compactionLog(floe: FloeProcess): { passes: PassLine[]; failures: string[] } {
  const passes: PassLine[] = [];
  const failures: string[] = [];
  for (const line of readFileSync(join(floe.dir, 'floe.log'), 'utf8').split('\n')) {
    if (line.includes('"compaction group failed"')) {
      try {
        const j = JSON.parse(line) as { table: string; hour: number; files: number; err?: { message?: string } };
        failures.push(`${j.table} hour ${j.hour} (${j.files} files): ${(j.err?.message ?? '').split('\n')[0]}`);
      } catch {
        failures.push(line.slice(0, 300));
      }
    }
    if (!line.includes('"compaction pass"')) continue;
    try {
      const j = JSON.parse(line) as { time: string; durationMs: number } & Omit<PassLine, 'end' | 'start'>;
      const end = Date.parse(j.time);
      passes.push({ end, start: end - j.durationMs, filesBefore: j.filesBefore, filesAfter: j.filesAfter, bytesBefore: j.bytesBefore, bytesAfter: j.bytesAfter, rowsRewritten: j.rowsRewritten, failedGroups: j.failedGroups });
    } catch {
      // a line cut by a concurrent write
    }
  }
  return { passes, failures };
}

interface TableFigures {
  appends: { files: number; bytes: number; rows: number };
  live: { files: number; bytes: number; rows: number; hours: number; maxFilesPerHour: number };
  /** Bytes of the id blocks / id filters beside the live files, and the rows of the files that have them. */
  blk: number;
  blkRows: number;
  idx: number;
  idxRows: number;
}

async function readCatalog(floe: FloeProcess): Promise<Record<string, TableFigures>> {
  const config = loadConfig({ file: floe.configFile, env: {} });
  const db = await openDbFromConfig(config);
  const store = objectStoreFromConfig(config);
  try {
    const catalog = openFloeCatalog(db, store);
    const out: Record<string, TableFigures> = {};
    for (const name of ['traces', 'logs', 'metrics']) {
      const handle = await catalog.loadTable(floeNamespace(floe.tenant, 'default'), name);
      if (!handle) throw new Error(`no table ${name}`);
      const appends = { files: 0, bytes: 0, rows: 0 };
      for (const s of handle.metadata.snapshots) {
        if (s.summary.operation !== 'append') continue;
        appends.files += Number(s.summary['added-data-files'] ?? 0);
        appends.bytes += Number(s.summary['added-files-size'] ?? 0);
        appends.rows += Number(s.summary['added-records'] ?? 0);
      }
      const files: PlannedFile[] = await catalog.planFiles(handle);
      const perHour = new Map<string, number>();
      for (const f of files) perHour.set(JSON.stringify(f.partition), (perHour.get(JSON.stringify(f.partition)) ?? 0) + 1);
      const size = (p: string) => {
        try {
          return statSync(p).size;
        } catch {
          return 0;
        }
      };
      let blk = 0;
      let blkRows = 0;
      let idx = 0;
      let idxRows = 0;
      if (store instanceof FsObjectStore) {
        for (const f of files) {
          const b = size(`${store.localPath(f.key)}.blk`);
          const i = size(`${store.localPath(f.key)}.idx`);
          blk += b;
          idx += i;
          if (b > 0) blkRows += f.recordCount;
          if (i > 0) idxRows += f.recordCount;
        }
      }
      out[name] = {
        appends,
        live: {
          files: files.length,
          bytes: files.reduce((a, f) => a + f.fileSizeBytes, 0),
          rows: files.reduce((a, f) => a + f.recordCount, 0),
          hours: perHour.size,
          maxFilesPerHour: Math.max(0, ...perHour.values()),
        },
        blk,
        blkRows,
        idx,
        idxRows,
      };
    }
    return out;
  } finally {
    await store.close();
    await db.close();
  }
}

async function prometheusRun() {
  const stream = newStream();
  const prom = await startPrometheusReceiver(['--web.enable-admin-api']);
  try {
    const r = await drive({ url: `${prom.url}/api/v1/write`, headers: REMOTE_WRITE_HEADERS, seconds: 3600, concurrency: CONCURRENCY, next: (w) => stream.next(w) });
    const appended = await promMetric(prom, 'prometheus_tsdb_head_samples_appended_total');
    // Head compaction: the first 2 h become a block once the head spans more than 3 h.
    const waitStart = Date.now();
    while (tsdbBlocks(prom.tsdb).length === 0 && Date.now() - waitStart < 180_000) await sleep(1000);
    await sleep(2000); // WAL truncation and checkpoint follow the block
    const blocks = tsdbBlocks(prom.tsdb);
    const dirs = { wal: duBytes(join(prom.tsdb, 'wal')), chunksHead: duBytes(join(prom.tsdb, 'chunks_head')), blocks: blocks.reduce((a, b) => a + b.bytes, 0), total: duBytes(prom.tsdb) };
    const snap = (await (await fetch(`${prom.url}/api/v1/admin/tsdb/snapshot`, { method: 'POST' })).json()) as { data: { name: string } };
    const snapBlocks = tsdbBlocks(join(prom.tsdb, 'snapshots', snap.data.name));
    const info = (await (await fetch(`${prom.url}/api/v1/status/buildinfo`)).json()) as { data: { version: string } };
    return { ...r, appended, blocks, dirs, snapBlocks, waitedMs: Date.now() - waitStart, version: info.data.version };
  } finally {
    await prom.stop();
  }
}

async function floeRun() {
  const floe = await startFloeProcess({ log: { level: 'info' }, compactor: { interval: `${COMPACTOR_INTERVAL_S}s` } });
  try {
    const otlp = { 'content-type': 'application/x-protobuf', authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant };
    const t0 = Date.now();
    const traces = await sendOtlp(`${floe.otlpHttpUrl}/v1/traces`, otlp, N, (seq) => new MarkedTemplate(spansBody(BATCH, seq % 8, seq), BATCH, 10).next());
    const logs = await sendOtlp(`${floe.otlpHttpUrl}/v1/logs`, otlp, N, (seq) => new MarkedTemplate(logsBody(BATCH, seq % 8, seq), BATCH, 5).next());
    const stream = newStream();
    const rw = await drive({
      url: `${floe.otlpHttpUrl}/api/v1/write`,
      headers: { ...REMOTE_WRITE_HEADERS, authorization: `Basic ${Buffer.from(`${floe.tenant}:${floe.apiKey}`).toString('base64')}` },
      seconds: 3600,
      concurrency: CONCURRENCY,
      next: (w) => stream.next(w),
    });
    const sendSeconds = (Date.now() - t0) / 1000;
    const drain = await new WalBacklog(floe.dir).drained(300_000);
    const committedAt = Date.now();
    // Compaction is done when the compactor has merged nothing for longer than the minimum file
    // age plus two intervals and a margin for a long pass: by then a pass has begun with every
    // file (the writer's and earlier passes' outputs alike) old enough and merged nothing more.
    // A pass that merged or failed logs 'compaction pass' when it ends; an idle one logs nothing.
    // A group that fails every pass (logged as 'compaction group failed') never merges: the
    // figures are then those of the files as they are, and the failures are printed.
    const quiet = MIN_FILE_AGE_MS + 2 * COMPACTOR_INTERVAL_S * 1000 + 60_000;
    const deadline = committedAt + 15 * 60_000;
    let complete = false;
    while (Date.now() < deadline) {
      const lastWork = Math.max(committedAt, ...compactionLog(floe).passes.filter((p) => p.rowsRewritten > 0).map((p) => p.end));
      if (Date.now() > lastWork + quiet) {
        complete = true;
        break;
      }
      await sleep(1000);
    }
    const { passes, failures } = compactionLog(floe);
    const waitedS = (Date.now() - committedAt) / 1000;
    await floe.stop();
    const tables = await readCatalog(floe);
    return { traces, logs, rw, sendSeconds, drain, complete, passes, failures, waitedS, tables };
  } finally {
    await floe.stop();
    if (!process.env.FLOE_BENCH_KEEP) floe.remove();
  }
}

const shape = newStream().shape();
const series = newStream().series;
const otlpPerSample = otlpBytesPerSample(series);
const loadBefore = loadAverage();
const prom = await prometheusRun();
const floe = await floeRun();
const loadAfter = loadAverage();

const per = (bytes: number, items: number) => (items > 0 ? fmt(bytes / items, 1) : 'n/a');
const t = floe.tables;
const samples = SERIES * ROUNDS;
console.log(`bench/bytes-on-disk: ${fmt(N)} spans, ${fmt(N)} log records, ${fmt(samples)} samples (${fmt(SERIES)} series × ${ROUNDS} scrapes every ${INTERVAL_MS / 1000} s)`);
console.log(`  load average before: ${loadBefore}; after: ${loadAfter}`);
console.log(
  `  floe: sent in ${fmt(floe.sendSeconds, 1)} s (errors: traces ${floe.traces.errors}, logs ${floe.logs.errors}, remote write ${floe.rw.errors}${floe.traces.firstError ?? floe.logs.firstError ?? floe.rw.firstError ? `; first: ${floe.traces.firstError ?? floe.logs.firstError ?? floe.rw.firstError}` : ''}); ` +
    `WAL drained ${fmt(floe.drain.ms / 1000, 1)} s after the last ack; ` +
    (floe.complete
      ? `compactor idle (nothing merged for ${(MIN_FILE_AGE_MS + 2 * COMPACTOR_INTERVAL_S * 1000 + 60_000) / 1000} s) ${fmt(floe.waitedS)} s after the last commit`
      : `compactor still merging ${fmt(floe.waitedS)} s after the last commit: figures below are as found`),
);
const rewritten = floe.passes.reduce((a, p) => ({ files: a.files + p.filesBefore, after: a.after + p.filesAfter, bytes: a.bytes + p.bytesBefore, bytesAfter: a.bytesAfter + p.bytesAfter }), { files: 0, after: 0, bytes: 0, bytesAfter: 0 });
const rowsRewritten = floe.passes.reduce((a, p) => a + p.rowsRewritten, 0);
console.log(
  `  compactor (every ${COMPACTOR_INTERVAL_S} s): ${floe.passes.filter((p) => p.rowsRewritten > 0).length} passes merged ${fmt(rewritten.files)} files (${fmt(rewritten.bytes)} bytes) into ${fmt(rewritten.after)} (${fmt(rewritten.bytesAfter)} bytes), ` +
    `rewriting ${fmt(rowsRewritten)} rows for the ${fmt(N * 2 + samples)} stored (${fmt(rowsRewritten / (N * 2 + samples), 2)}x)`,
);
if (floe.failures.length > 0) {
  const distinct = [...new Set(floe.failures)];
  console.log(`  compaction group failures: ${floe.failures.length}${distinct.length === 1 ? ', every one' : ''}: ${distinct.slice(0, 3).join(' | ')}`);
}
const row = (label: string, name: string, items: number, raw: string) => {
  const f = t[name]!;
  console.log(`  ${label}`);
  console.log(`    raw: ${raw}`);
  console.log(`    after the writer's commits: ${per(f.appends.bytes, f.appends.rows)} B Parquet (${fmt(f.appends.files)} files, ${fmt(f.appends.rows)} rows)`);
  const cover = (rows: number) => (rows === f.live.rows ? '' : ` (of the ${fmt(rows)} rows whose files have them)`);
  const side =
    name === 'traces'
      ? ` + id blocks ${per(f.blk, f.blkRows)} B${cover(f.blkRows)} + id filters ${per(f.idx, f.idxRows)} B${cover(f.idxRows)}` +
        (f.blkRows === f.live.rows && f.idxRows === f.live.rows ? ` = ${per(f.live.bytes + f.blk + f.idx, f.live.rows)} B` : '')
      : '';
  console.log(
    `    after compaction:           ${per(f.live.bytes, f.live.rows)} B Parquet${side} (${fmt(f.live.files)} files over ${f.live.hours} hour partitions, at most ${f.live.maxFilesPerHour} per hour; ${fmt(f.live.rows)} rows of ${fmt(items)} acknowledged)`,
  );
};
row('per span:', 'traces', floe.traces.items, `${per(floe.traces.rawBytes, N)} B OTLP protobuf (100 spans per request)`);
row('per log record:', 'logs', floe.logs.items, `${per(floe.logs.rawBytes, N)} B OTLP protobuf (100 records per request)`);
row(
  'per sample:',
  'metrics',
  floe.rw.items,
  `${fmt(shape.rawBytes / shape.samplesPerRequest, 1)} B remote-write protobuf (${fmt(shape.bodyBytes / shape.samplesPerRequest, 1)} B snappy as sent, ${fmt(shape.snappyjsBytes / shape.samplesPerRequest, 1)} B with snappyjs); ${fmt(otlpPerSample, 1)} B as OTLP protobuf`,
);
const blockBytes = prom.blocks.reduce((a, b) => a + b.bytes, 0);
const blockSamples = prom.blocks.reduce((a, b) => a + b.samples, 0);
const snapBytes = prom.snapBlocks.reduce((a, b) => a + b.bytes, 0);
const snapSamples = prom.snapBlocks.reduce((a, b) => a + b.samples, 0);
console.log(`    prometheus ${prom.version} (${fmt(prom.items)} samples acknowledged, ${prom.errors} errors, head appended ${fmt(prom.appended)}):`);
console.log(
  `      head-compacted 2 h block${prom.blocks.length === 1 ? '' : 's'}: ${per(blockBytes, blockSamples)} B per sample (${fmt(blockBytes)} bytes, ${fmt(blockSamples)} samples in ${prom.blocks.length} block${prom.blocks.length === 1 ? '' : 's'}${prom.blocks.length === 0 ? `: none after ${fmt(prom.waitedMs / 1000)} s` : ''})`,
);
console.log(`      snapshot of everything (blocks + head as a block): ${per(snapBytes, snapSamples)} B per sample (${fmt(snapBytes)} bytes, ${fmt(snapSamples)} samples)`);
console.log(
  `      data dir after the head compaction: ${fmt(prom.dirs.total)} bytes (${per(prom.dirs.total, samples)} B per sample): blocks ${fmt(prom.dirs.blocks)}, wal ${fmt(prom.dirs.wal)}, chunks_head ${fmt(prom.dirs.chunksHead)}`,
);
process.exit(0);
