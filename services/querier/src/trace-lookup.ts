import { create, TempoTraceByIDResponseSchema, type TempoTraceByIDResponse } from '@floe/proto';
import { tableRows } from '@floe/flight';
import { emptyColumnsDdl, rebuildTrace, reviveRowJson, tracesTable, type SpanRow } from '@floe/schema';
import { IdBlocksIndex, Lru, idBlocksKey, readIdPayload, type ObjectStore } from '@floe/storage';
import type { Logger } from '@floe/telemetry';
import type { CandidateFile, FileResolver } from './file-resolver.ts';
import type { SandboxResult, SandboxView } from './sandbox/index.ts';

/**
 * Trace by id, as Tempo's FindTraceByID: the files that may hold the trace (hour partitions, then
 * each file's id filter) are read through their id blocks, one range read each; files without
 * id blocks (the writer's recent flush files, which the compactor has not merged yet) are
 * searched with SQL on the warm DuckDB. Spans come back whole, rebuilt as OTLP ResourceSpans.
 */
export interface TraceLookupRequest {
  tenant: string;
  dataset: string;
  /** 32 lower-case hex digits. */
  traceId: string;
  startNs?: bigint;
  endNs?: bigint;
  /** Milliseconds left for the whole lookup. */
  timeoutMs: number;
  /** Aborts when the caller went away: the scan of unindexed files is interrupted. */
  signal?: AbortSignal;
}

export type RunSql = (o: { views: SandboxView[]; sql: string; params: unknown[]; timeoutMs: number; signal?: AbortSignal }) => Promise<SandboxResult>;

/** Each index entry (one block) costs about 100 bytes: this bounds the cache near 100 MB. */
const MAX_CACHED_BLOCKS = 1_000_000;

// Sorted so that DuckDB hands the trace over whole: streamed unsorted, a selective scan answers
// one chunk per vector that holds a match (a row each here), and every chunk is a fetch through
// the node bindings' thread pool. A 100-span trace in one 198,000-row flush file: 100 fetches and
// 122-138 ms, against one fetch and 39-49 ms sorted (bench/RESULTS.md, trace-by-id).
const SCAN_SQL = 'SELECT * EXCLUDE ("timestamp", duration_nano) FROM traces WHERE trace_id = $1 ORDER BY start_time_unix_nano, span_id';

interface BlocksMeta {
  columns?: unknown;
}

export class TraceLookup {
  readonly #files: FileResolver;
  readonly #store: ObjectStore;
  readonly #runSql: RunSql;
  readonly #log: Logger;
  /** Per data file: its id-blocks index, or null when it has none. Both are immutable facts. */
  readonly #indexes = new Lru<string, IdBlocksIndex | null>(MAX_CACHED_BLOCKS, (v) => 1 + (v?.blockCount ?? 0));

  constructor(files: FileResolver, store: ObjectStore, runSql: RunSql, log: Logger) {
    this.#files = files;
    this.#store = store;
    this.#runSql = runSql;
    this.#log = log;
  }

  async find(req: TraceLookupRequest): Promise<TempoTraceByIDResponse> {
    const started = Date.now();
    const { files } = await this.#files.candidates(req.tenant, req.dataset, 'traces', { traceId: req.traceId, startNs: req.startNs, endNs: req.endNs });
    const rows: SpanRow[] = [];
    const unindexed: CandidateFile[] = [];
    let inspectedBytes = 0;
    await Promise.all(
      files.map(async (f) => {
        const found = await this.#fromBlocks(f.key, req.traceId);
        if (found === undefined) unindexed.push(f);
        else {
          for (const r of found.rows) rows.push(r);
          inspectedBytes += found.bytesRead;
        }
      }),
    );
    if (unindexed.length > 0) {
      const leased = await this.#files.lease(req.dataset, 'traces', unindexed);
      try {
        const timeoutMs = Math.max(1, req.timeoutMs - (Date.now() - started));
        const view = { name: 'traces', files: leased.paths, emptySchemaSql: emptyColumnsDdl(tracesTable) };
        const result = await this.#runSql({ views: [view], sql: SCAN_SQL, params: [req.traceId], timeoutMs, signal: req.signal });
        for (const r of tableRows<SpanRow>(result.table)) rows.push(r);
      } finally {
        leased.release();
      }
    }
    this.#log.debug({ tenant: req.tenant, spans: rows.length, files: files.length, scanned: unindexed.length, ms: Date.now() - started }, 'trace by id');
    return create(TempoTraceByIDResponseSchema, {
      trace: { resourceSpans: rows.length > 0 ? rebuildTrace(rows) : [] },
      metrics: { inspectedBytes: BigInt(inspectedBytes), backendReads: BigInt(files.length - unindexed.length) },
    });
  }

  /** The trace's rows in one file through its id blocks; undefined when the file has none. */
  async #fromBlocks(key: string, traceId: string): Promise<{ rows: SpanRow[]; bytesRead: number } | undefined> {
    const index = await this.#index(key);
    if (!index) return undefined;
    const columns = (index.meta as BlocksMeta).columns;
    if (!Array.isArray(columns)) return undefined;
    try {
      const { payload, bytesRead } = await readIdPayload(this.#store, idBlocksKey(key), index, traceId);
      if (payload === undefined) return { rows: [], bytesRead };
      const values = JSON.parse(payload) as unknown[][];
      return { rows: values.map((v) => reviveRowJson<SpanRow>(tracesTable, columns as string[], v)), bytesRead };
    } catch (err) {
      this.#log.warn({ err, key }, 'unreadable id blocks; scanning the file');
      return undefined;
    }
  }

  async #index(key: string): Promise<IdBlocksIndex | null> {
    const cached = this.#indexes.get(key);
    if (cached !== undefined) return cached;
    try {
      const index = (await IdBlocksIndex.load(this.#store, idBlocksKey(key))) ?? null;
      this.#indexes.set(key, index);
      return index;
    } catch (err) {
      // Not remembered: a store that failed once may answer the next time.
      this.#log.warn({ err, key }, 'unreadable id blocks index; scanning the file');
      return null;
    }
  }
}
