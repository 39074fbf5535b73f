// Test helpers for the writer's tests (not exported from the package): a real meta database,
// store and catalog in a temp dir; a real OpenTelemetry SDK meter read in memory; a logger made
// as Floe makes it, writing to a file the test reads; WAL segments sealed as an acceptor seals them.

import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { openFloeCatalog, type FloeCatalog } from '@floe/iceberg';
import { migrate, openDb, type Db } from '@floe/meta';
import { createObjectStore, newRecordId, ParquetWriter, WalAppender, type ObjectStore } from '@floe/storage';
import { createLogger, noSelfTelemetry, type Attributes, type Logger, type SelfTelemetry } from '@floe/telemetry';

export interface WriterFixture {
  dir: string;
  db: Db;
  store: ObjectStore;
  catalog: FloeCatalog;
  writer: ParquetWriter;
  /** A log captured in the fixture's dir (closed with it). */
  capture(level: CaptureLevel): CapturedLog;
  close(): Promise<void>;
}

/** A migrated in-memory PGlite meta database, a directory store, Floe's catalog on both and a Parquet writer. */
export async function openWriterFixture(name: string): Promise<WriterFixture> {
  const dir = mkdtempSync(join(tmpdir(), `floe-${name}-`));
  const db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
  await migrate(db);
  const store = createObjectStore({ kind: 'fs', root: join(dir, 'store') });
  const writer = new ParquetWriter(join(dir, 'work'));
  const logs: CapturedLog[] = [];
  return {
    dir,
    db,
    store,
    catalog: openFloeCatalog(db, store),
    writer,
    capture(level) {
      const captured = capturedLog(dir, level);
      logs.push(captured);
      return captured;
    },
    async close() {
      for (const captured of logs) await captured.close();
      writer.close();
      await store.close();
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The SDK has no pull reader for tests: this one only collects when asked. */
class CollectingReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

export interface RecordedPoint {
  attributes: Attributes;
  /** A number for counters; { count, sum, … } for histograms. */
  value: unknown;
}

export interface RecordingTelemetry {
  telemetry: SelfTelemetry;
  /** The data points of one instrument, cumulative since the telemetry was made. */
  points(name: string): Promise<RecordedPoint[]>;
}

/** Self-telemetry whose meter is a real OpenTelemetry SDK MeterProvider, read in memory. */
export function recordingTelemetry(): RecordingTelemetry {
  const reader = new CollectingReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    telemetry: { enabled: true, tracer: noSelfTelemetry.tracer, meter: provider.getMeter('floe-writer-test') },
    async points(name) {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed');
      return resourceMetrics.scopeMetrics
        .flatMap((s) => s.metrics)
        .filter((m) => m.descriptor.name === name)
        .flatMap((m) => (m.dataPoints as Array<{ attributes: Attributes; value: unknown }>).map(({ attributes, value }) => ({ attributes, value })));
    },
  };
}

export type LogLine = Record<string, unknown> & { level: string; msg: string };
export type CaptureLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

export interface CapturedLog {
  log: Logger;
  /** Every line logged before the call, parsed. */
  lines(): Promise<LogLine[]>;
  close(): Promise<void>;
}

/**
 * createLogger (Floe's JSON lines, level by name) writing to a file under `dir`. Its stream
 * writes asynchronously, in order, and its flush does not wait: lines() logs a barrier line and
 * reads once the barrier is in the file, so every line logged before it is there too. The barrier
 * goes at the logger's own level: pino writes fatal lines synchronously, which can lose a line
 * whose asynchronous write is in flight.
 */
function capturedLog(dir: string, level: CaptureLevel): CapturedLog {
  const file = join(dir, `log-${newRecordId()}.ndjson`);
  const fd = openSync(file, 'w');
  const log = createLogger({ level, fd });
  const written = () => {
    const text = readFileSync(file, 'utf8');
    return text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean).map((l) => JSON.parse(l) as LogLine);
  };
  const lines = async () => {
    const barrier = newRecordId();
    log[level]({ barrier }, 'test log barrier');
    const all = await eventually('the log barrier line', async () => {
      const got = written();
      return got.some((l) => l.barrier === barrier) ? got : undefined;
    });
    return all.filter((l) => l.barrier === undefined);
  };
  return {
    log,
    lines,
    async close() {
      // Once every write has landed: closing under one in flight fails it (EBADF).
      await lines();
      closeSync(fd);
    },
  };
}

/** Seals one WAL segment holding one NDJSON record of `rows`, as an acceptor writes it. */
export async function sealSegment(store: ObjectStore, header: { tenant: string; dataset?: string; table: string; hour: number }, rows: ReadonlyArray<Record<string, unknown>>): Promise<void> {
  const wal = new WalAppender(store, { instanceId: `acc-test-${newRecordId()}` });
  const payload = Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  await wal.append([{ header: { dataset: 'default', ...header, rows: rows.length, id: newRecordId() }, payload }]);
  await wal.close();
}

/** Polls `probe` until it answers something (not undefined); fails after `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await probe();
    if (answer !== undefined) return answer;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
