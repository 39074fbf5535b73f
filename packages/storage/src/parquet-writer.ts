import { randomUUID } from 'node:crypto';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import {
  attributeTypesSql,
  duckdbType,
  rawColumns,
  parquetFieldIds,
  quoteIdent,
  readJsonColumns,
  rowJsonColumns,
  rowJsonSql,
  rowGroupSizeOf,
  selectRewriteColumns,
  selectStoredColumns,
  timeColumn,
  type AttributeType,
  type TableDef,
} from '@floe/schema';
import { attributeKeyCounts, type AttributeTypeCount } from './attribute-key-counts.ts';
import { NO_DUCKDB_MEMORY, readDuckDbMemory, type DuckDbMemory } from './duckdb-memory.ts';
import { IdBlocksWriter } from './id-blocks.ts';
import { concatParquet, ParquetConcatError, readParquetFooter, rowGroupOffsets, type ParquetFooter } from './parquet-concat.ts';
import { verifyLocalParquetPages } from './parquet-verify.ts';
import { isColumnBatch, readColumnBatch, readColumnBatchHead, type BatchSchemaInfo, type ColumnBatchHead, type ColumnBatchView } from './column-batch.ts';
import { writeColumnBatchParquet } from './column-batch-parquet.ts';
import { NeedsDuckDbError, sortedParquetPlan } from './sorted-batch-parquet.ts';
import { SortedParquetEncoder } from './sorted-parquet-encoder.ts';
import { WalCorruptionError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';
import type { WalRecord } from './wal-format.ts';
import { segmentBytes } from './wal-segments.ts';

/**
 * Writes sorted, zstd Parquet files with Iceberg field ids, from either WAL record payloads
 * (column batches or NDJSON, as the acceptor wrote them) or existing Parquet files (compaction).
 * Column batches of one schema, the writer's usual flush, are sorted and encoded by Floe's own
 * encoder on a thread of its own (sorted-batch-parquet.ts, sorted-parquet-encoder.ts); anything
 * else (NDJSON, batches of several schemas, a label holding a double, rewrites) by
 * DuckDB, whose sort and encoding run in native code (reference/storage.md §1). Each written file
 * reports the statistics its Iceberg manifest entry and its id filter need.
 */
export interface WrittenFile {
  path: string;
  sizeBytes: number;
  rowCount: number;
  /** Bounds of the table's unix-nanosecond time column (timeColumn: a span's start, a log record's time…). */
  minStartNs: bigint;
  maxStartNs: bigint;
  minTimestampUs: bigint;
  maxTimestampUs: bigint;
  /** Distinct values of the table's id column (for the per-file id filter). */
  ids: string[];
  /** The file's rows grouped by id (id-blocks.ts), when asked for. */
  idBlocksPath?: string;
  /** Values per attribute key and type over every typed map of the file, when asked for. */
  attributeTypes?: AttributeTypeCount[];
  /** The rows are not in the table's sort order as a whole (a concatenation of sorted files). */
  unsorted?: boolean;
  /**
   * Where its row groups start, for Iceberg's split_offsets: set on what compaction writes
   * (`rewrite`, `concatenate`), not on the writer's flush files, so a planner can tell the two
   * apart and count a concatenation's row groups.
   */
  rowGroupOffsets?: number[];
}

export interface WriteOptions {
  /**
   * Also write the rows grouped by the table's id column (id-blocks.ts). About as costly again
   * as the Parquet file itself, so the compactor builds them for the files it keeps, and the
   * writer's short-lived flush files go without.
   */
  idBlocks?: boolean;
  /**
   * Also count the values per attribute key and type (WrittenFile.attributeTypes), from the column
   * batches' key leaves, or where there are none (NDJSON payloads, a rewrite) with one more
   * query over the written file's map columns. The writer checks type pins with it.
   */
  attributeTypes?: boolean;
}

/**
 * A condition over a table's columns with `$1…$n` placeholders and their values (as @floe/query
 * prints them): the rows a rewrite leaves out (delete requests), never text a caller typed.
 */
export interface RowCondition {
  sql: string;
  params: ReadonlyArray<string | number | boolean | null>;
}

const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * Who encodes column batches: `auto` writes batches of one schema without DuckDB where the table
 * allows (sorted-batch-parquet.ts) and everything else with DuckDB; `duckdb` always uses DuckDB
 * (tests and benchmarks compare the two).
 */
export type BatchEncoder = 'auto' | 'duckdb';

/** A WAL record as ParquetWriter.readSegment gives it: its column batch checked (its head read), or why it is not one. */
export interface CheckedRecord extends WalRecord {
  batch?: ColumnBatchHead;
  batchError?: string;
  /** A batch of series references that failed its check: the definitions of its segment it references (to set aside with it). */
  definitions?: Uint8Array[];
}

export class ParquetWriter {
  readonly #dir: string;
  readonly #threads: number;
  readonly #encoder: BatchEncoder;
  readonly #memoryLimit: string;
  readonly #sorted = new SortedParquetEncoder();
  #dirMade: Promise<unknown> | undefined;
  #instance: DuckDBInstance | undefined;
  #conn: DuckDBConnection | undefined;
  /** A second connection, for memoryUsage: the first may be busy with a long COPY. */
  #statsConn: DuckDBConnection | undefined;
  /** The memoryUsage reading in progress on #statsConn (one statement at a time on a connection). */
  #statsRead: Promise<DuckDbMemory> | undefined;
  /** The DuckDB connection's work, one write at a time (a connection runs one statement at once; callers may write concurrently). */
  #duckdbTail: Promise<unknown> = Promise.resolve();

  /**
   * `threads`: DuckDB's worker threads for the sort and the encoding. `memoryLimit`: DuckDB's
   * memory_limit ('2GB' by default; writer.memory_limit, compactor.memory_limit), beyond which
   * its sorts spill to the work directory.
   */
  constructor(workDir: string, opts: { threads?: number; encoder?: BatchEncoder; memoryLimit?: string } = {}) {
    this.#dir = workDir;
    this.#threads = opts.threads ?? 2;
    this.#encoder = opts.encoder ?? 'auto';
    this.#memoryLimit = opts.memoryLimit ?? '2GB';
  }

  /** The work directory, made once (again after a failure: it may have been removed). */
  #workDir(): Promise<unknown> {
    return (this.#dirMade ??= mkdir(this.#dir, { recursive: true }).catch((err: unknown) => {
      this.#dirMade = undefined;
      throw err;
    }));
  }

  async #connection(): Promise<DuckDBConnection> {
    if (!this.#conn) {
      await this.#workDir();
      // The files it reads (inputs of a rewrite, what it wrote, read back for statistics) are read
      // once: DuckDB's cache of file bytes would only hold them, up to memory_limit, long after.
      this.#instance = await DuckDBInstance.create(':memory:', {
        threads: String(this.#threads),
        memory_limit: this.#memoryLimit,
        temp_directory: join(this.#dir, 'duckdb-tmp'),
        enable_external_file_cache: 'false',
      });
      this.#conn = await this.#instance.connect();
    }
    return this.#conn;
  }

  /**
   * What DuckDB holds now (duckdb_memory()), read on a connection of its own so a COPY in
   * progress does not hold it up; nothing before the first write that needs DuckDB creates the
   * instance (and none is created for it).
   */
  memoryUsage(): Promise<DuckDbMemory> {
    const instance = this.#instance;
    if (!instance) return Promise.resolve(NO_DUCKDB_MEMORY);
    return (this.#statsRead ??= (async () => {
      try {
        let conn = this.#statsConn;
        if (!conn) {
          conn = await instance.connect();
          // Closed meanwhile: close() leaves the instance open until this reading ends.
          if (this.#instance !== instance) {
            conn.closeSync();
            return NO_DUCKDB_MEMORY;
          }
          this.#statsConn = conn;
        }
        return await readDuckDbMemory(conn);
      } finally {
        this.#statsRead = undefined;
      }
    })());
  }

  /**
   * WAL record payloads (column batches, as bytes or already read, or the older NDJSON rows: one JSON object per line,
   * raw column layout) → one stored-layout file. Column batches of one schema become one
   * uncompressed Parquet file (column-batch-parquet.ts), NDJSON one file for read_json; DuckDB
   * reads them all as raw columns (a column a batch schema lacks is NULL) and sorts and encodes
   * the union. Throws on a malformed payload.
   */
  async write(table: TableDef, payloads: readonly (Uint8Array | ColumnBatchHead)[], opts: WriteOptions = {}): Promise<WrittenFile> {
    const json: Uint8Array[] = [];
    const bySchema = new Map<BatchSchemaInfo, ColumnBatchHead[]>();
    for (const p of payloads) {
      if (p instanceof Uint8Array && !isColumnBatch(p)) {
        json.push(p);
        continue;
      }
      // Payloads may come already checked, their heads read (the committer checks every batch before it writes).
      const head = p instanceof Uint8Array ? readColumnBatch(p) : p;
      const list = bySchema.get(head.schema);
      if (list) list.push(head);
      else bySchema.set(head.schema, [head]);
    }
    // Id blocks are read back through DuckDB: those writes stay on the DuckDB path.
    if (json.length === 0 && bySchema.size === 1 && this.#encoder === 'auto' && !opts.idBlocks) {
      const [schema, batches] = [...bySchema][0]!;
      const plan = sortedParquetPlan(table, schema);
      if (plan && batches.some((b) => b.rows > 0)) {
        try {
          return await this.#writeSorted(table, batches, opts);
        } catch (err) {
          // What only DuckDB writes as itself (a label holding a double): the same rows, by DuckDB.
          if (!(err instanceof NeedsDuckDbError)) throw err;
        }
      }
    }
    // DuckDB (and its work directory) only for the writes that need it.
    return this.#exclusive(() => this.#writeByDuckDb(table, json, bySchema, opts));
  }

  async #writeByDuckDb(table: TableDef, json: Uint8Array[], bySchema: Map<BatchSchemaInfo, ColumnBatchHead[]>, opts: WriteOptions): Promise<WrittenFile> {
    await this.#connection();
    const inputs: string[] = [];
    try {
      const sources: string[] = [];
      const raw = rawColumns(table);
      if (json.length > 0) {
        const input = join(this.#dir, `${randomUUID()}.ndjson`);
        inputs.push(input);
        await writeFile(input, json);
        sources.push(`SELECT * FROM read_json(${literal(input)}, format = 'newline_delimited', columns = ${readJsonColumns(table)}, maximum_object_size = 67108864)`);
      }
      if (bySchema.size > 0) {
        const files: string[] = [];
        const present = new Set<string>();
        for (const [schema, heads] of bySchema) {
          const input = join(this.#dir, `${randomUUID()}.batch.parquet`);
          inputs.push(input);
          await writeColumnBatchParquet(input, heads.map(batchViewOf));
          files.push(input);
          for (const name of schema.names) present.add(name);
        }
        const cols = raw.map((c) => `CAST(${present.has(c.name) ? quoteIdent(c.name) : 'NULL'} AS ${duckdbType(c.type)}) AS ${quoteIdent(c.name)}`);
        sources.push(`SELECT ${cols.join(', ')} FROM read_parquet([${files.map(literal).join(', ')}], union_by_name = true)`);
      }
      // Counted from the batches unless NDJSON rows must be counted too (then by the query).
      const counts = opts.attributeTypes && json.length === 0 ? attributeKeyCounts(table, [...bySchema.values()].flat().map(batchViewOf)) : undefined;
      const out = await this.#copy(table, `SELECT ${selectStoredColumns(table)} FROM (${sources.join(' UNION ALL ')})`, counts ? { ...opts, attributeTypes: false } : opts);
      return counts ? { ...out, attributeTypes: counts } : out;
    } finally {
      await Promise.all(inputs.map((f) => rm(f, { force: true })));
    }
  }

  async #writeSorted(table: TableDef, batches: readonly ColumnBatchHead[], opts: WriteOptions): Promise<WrittenFile> {
    await this.#workDir();
    const path = join(this.#dir, `${randomUUID()}.parquet`);
    try {
      const out = await this.#sorted.encode(path, table, batches, opts.attributeTypes === true);
      return { path, ...out.result, ...(out.attributeTypes ? { attributeTypes: out.attributeTypes } : {}) };
    } catch (err) {
      // The next write makes the directory again, should it be what went missing.
      this.#dirMade = undefined;
      await rm(path, { force: true });
      throw err;
    }
  }

  /**
   * Existing stored-layout Parquet files → one file in canonical order (compaction). Columns are
   * copied by name (selectRewriteColumns): a label column is filled from the maps where an input
   * was written without it, and a column the inputs all lack (added to the table after they were
   * written) is NULL, so a rewrite never fails on a column the table has and its files don't.
   */
  rewrite(table: TableDef, files: readonly string[], opts: WriteOptions = {}): Promise<WrittenFile> {
    return this.#exclusive(async () => withRowGroupOffsets(await this.#copy(table, await this.#tableRows(table, files), opts)));
  }

  /**
   * The files without the rows a condition holds for (NULL keeps a row), as `rewrite` reads them:
   * how many rows they hold and how many the condition selects, in one read; and, only when some
   * but not all go, one file of the rest in canonical order. Delete requests and per-stream
   * retention rewrite data files with it.
   */
  deleteWhere(table: TableDef, files: readonly string[], where: RowCondition, opts: WriteOptions = {}): Promise<{ rows: number; deleted: number; kept?: WrittenFile }> {
    return this.#exclusive(() => this.#deleteWhere(table, files, where, opts));
  }

  async #deleteWhere(table: TableDef, files: readonly string[], where: RowCondition, opts: WriteOptions): Promise<{ rows: number; deleted: number; kept?: WrittenFile }> {
    const conn = await this.#connection();
    const rows = await this.#tableRows(table, files);
    const counted = await conn.runAndReadAll(`SELECT count(*)::BIGINT, (count(*) FILTER (WHERE (${where.sql}) IS TRUE))::BIGINT FROM (${rows})`, [...where.params]);
    const [total, deleted] = counted.getRows()[0]!.map(Number) as [number, number];
    if (deleted === 0 || deleted === total) return { rows: total, deleted };
    const kept = await withRowGroupOffsets(await this.#copy(table, `SELECT * FROM (${rows}) WHERE (${where.sql}) IS NOT TRUE`, opts, where.params));
    return { rows: total, deleted, kept };
  }

  /** A SELECT of the files' rows as the table's stored columns (selectRewriteColumns). */
  async #tableRows(table: TableDef, files: readonly string[]): Promise<string> {
    // DuckDB does not check page crcs: a flipped bit would be read as a wrong value, and the
    // rewrite would give it fresh, matching crcs. The file fails its rewrite instead, named, for
    // the operator's repair (floe ops drop-damaged-files --check-pages).
    for (const f of files) {
      const damage = await verifyLocalParquetPages(f);
      if (damage) throw new ParquetConcatError(`not rewritten: ${damage.message}`);
    }
    const conn = await this.#connection();
    const source = `read_parquet([${files.map(literal).join(', ')}], union_by_name = true)`;
    // Reads only the footers.
    const described = await conn.runAndReadAll(`DESCRIBE SELECT * FROM ${source}`);
    const present = new Set(described.getRowObjectsJson().map((r) => String(r.column_name)));
    return `SELECT ${selectRewriteColumns(table, present)} FROM ${source}`;
  }

  /**
   * Any SELECT that yields the table's stored columns → one file in canonical order (used to
   * generate benchmark data through the same encoding path).
   */
  writeQuery(table: TableDef, select: string, opts: WriteOptions = {}): Promise<WrittenFile> {
    return this.#exclusive(() => this.#copy(table, select, opts));
  }

  /** `work` after every DuckDB write before it, whatever became of them. */
  #exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#duckdbTail.then(work, work);
    this.#duckdbTail = run.catch(() => undefined);
    return run;
  }

  async #copy(table: TableDef, source: string, opts: WriteOptions = {}, params: RowCondition['params'] = []): Promise<WrittenFile> {
    const conn = await this.#connection();
    const output = join(this.#dir, `${randomUUID()}.parquet`);
    try {
      const order = table.sortOrder.map(quoteIdent).join(', ');
      await conn.run(
        `COPY (${source} ORDER BY ${order}) ` +
          `TO ${literal(output)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${rowGroupSizeOf(table)}, FIELD_IDS ${parquetFieldIds(table)})`,
        params.length > 0 ? [...params] : undefined,
      );
      return await this.#describe(conn, table, output, opts);
    } catch (err) {
      await rm(output, { force: true });
      await rm(`${output}.blk`, { force: true });
      throw err;
    }
  }

  /** What a written file's manifest entry, id filter and type pins need, read back from it. */
  async #describe(conn: DuckDBConnection, table: TableDef, output: string, opts: WriteOptions): Promise<WrittenFile> {
    const src = `read_parquet(${literal(output)})`;
    const ns = quoteIdent(timeColumn(table));
    const ts = quoteIdent(table.partitionSource);
    const statsReader = await conn.runAndReadAll(`SELECT count(*)::BIGINT, min(${ns}), max(${ns}), epoch_us(min(${ts})), epoch_us(max(${ts})) FROM ${src}`);
    const [n, minNs, maxNs, minUs, maxUs] = statsReader.getRows()[0]! as [bigint, bigint, bigint, bigint, bigint];
    const id = table.idColumn;
    const byId = !id
      ? { ids: [] }
      : opts.idBlocks
        ? await this.#writeIdBlocks(conn, table, id, src, `${output}.blk`)
        : { ids: (await conn.runAndReadAll(`SELECT DISTINCT ${quoteIdent(id)} FROM ${src} WHERE ${quoteIdent(id)} IS NOT NULL`)).getRows().map((r) => String(r[0])) };
    const attributeTypes = opts.attributeTypes ? await this.#attributeTypes(conn, table, src) : undefined;
    const { size } = await stat(output);
    return {
      path: output,
      sizeBytes: size,
      rowCount: Number(n),
      minStartNs: minNs,
      maxStartNs: maxNs,
      minTimestampUs: minUs,
      maxTimestampUs: maxUs,
      ...byId,
      ...(attributeTypes ? { attributeTypes } : {}),
    };
  }

  /**
   * Parquet files of the table → one file of all their row groups, copied without decoding
   * (parquet-concat.ts): the merge for an hour still being written. The result is not in the
   * table's sort order as a whole (`unsorted`); the files must share one schema
   * (readParquetFooter's schemaKey), else ParquetConcatError. Id blocks are not written: the
   * hour's sorted rewrite, once it closes, builds them.
   */
  concatenate(table: TableDef, inputs: readonly ParquetFooter[]): Promise<WrittenFile> {
    return this.#exclusive(async () => {
      await this.#workDir();
      const output = join(this.#dir, `${randomUUID()}.parquet`);
      const made = await concatParquet(inputs, output);
      try {
        return { ...(await this.#describe(await this.#connection(), table, output, {})), unsorted: true, rowGroupOffsets: made.rowGroupOffsets };
      } catch (err) {
        await rm(output, { force: true });
        throw err;
      }
    });
  }

  async #attributeTypes(conn: DuckDBConnection, table: TableDef, src: string): Promise<AttributeTypeCount[]> {
    const rows = (await conn.runAndReadAll(attributeTypesSql(table, src))).getRows();
    return rows.map(([key, type, n]) => ({ key: String(key), type: type as AttributeType, count: Number(n) }));
  }

  /**
   * The written file's rows again, grouped by id and sorted by it, as id blocks: DuckDB sorts and
   * serialises, JavaScript joins each id's rows and frames and compresses them. Also yields the
   * distinct ids for the file's id filter. The blocks' meta names the row columns.
   */
  async #writeIdBlocks(conn: DuckDBConnection, table: TableDef, idColumn: string, src: string, path: string) {
    const id = quoteIdent(idColumn);
    // Rows sorted by id, grouped here: DuckDB's sort spills to its temp directory, where a
    // GROUP BY … string_agg held every group of an hour in memory (out of memory near 1M spans).
    const result = await conn.stream(`SELECT ${id}, ${rowJsonSql(table)}::VARCHAR FROM ${src} WHERE ${id} IS NOT NULL ORDER BY ${id}`);
    const writer = await IdBlocksWriter.create(path);
    const ids: string[] = [];
    let current: string | undefined;
    let rows: string[] = [];
    const flush = async () => {
      if (current === undefined) return;
      ids.push(current);
      await writer.add(current, `[${rows.join(',')}]`);
    };
    try {
      for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk()) {
        const keys = chunk.getColumnValues(0);
        const values = chunk.getColumnValues(1);
        for (let i = 0; i < keys.length; i++) {
          const key = String(keys[i]);
          if (key !== current) {
            await flush();
            current = key;
            rows = [];
          }
          rows.push(String(values[i]));
        }
      }
      await flush();
      await writer.finish({ columns: rowJsonColumns(table) });
    } catch (err) {
      await writer.abort();
      await rm(path, { force: true });
      throw err;
    }
    return { ids, idBlocksPath: path };
  }

  /**
   * A WAL segment's records, verified on the writer's thread (segment-check.ts): its framing and
   * CRCs (a damaged segment throws WalCorruptionError) and each column batch's leaves (`batch`,
   * read here without the per-level check, or `batchError` saying why it failed). Payloads are
   * views of the segment, in memory from `alloc` where the store reads into it. Any other error
   * (the store, the thread) is thrown as it is: the segment was not read, not found damaged.
   */
  async readSegment(store: ObjectStore, key: string, alloc?: (bytes: number) => Uint8Array): Promise<CheckedRecord[]> {
    const bytes = await segmentBytes(store, key, alloc);
    const check = await this.#sorted.checkSegment(key, bytes);
    if ('corrupt' in check) throw new WalCorruptionError(key, check.corrupt.offset, check.corrupt.reason);
    // Series definitions are not rows: the batches that reference them carry them (ColumnBatchHead.defs).
    const defs: ColumnBatchHead[][] = [];
    const records: CheckedRecord[] = [];
    for (const { header, offset, length, batchError, defGroup, refGroup } of check.records) {
      const payload = bytes.subarray(offset, offset + length);
      if (batchError !== undefined) {
        const definitions = refGroup !== undefined ? defs[refGroup]?.map((d) => d.bytes) : undefined;
        records.push({ header, payload, batchError, ...(definitions ? { definitions } : {}) });
      } else if (defGroup !== undefined) (defs[defGroup] ??= []).push(readColumnBatchHead(payload));
      else if (!isColumnBatch(payload)) records.push({ header, payload });
      else {
        const batch = readColumnBatchHead(payload);
        if (refGroup !== undefined) batch.defs = defs[refGroup]!;
        records.push({ header, payload, batch });
      }
    }
    return records;
  }

  close(): void {
    this.#sorted.close();
    this.#conn?.closeSync();
    const [instance, stats] = [this.#instance, this.#statsConn];
    // A memoryUsage reading still running keeps its connection and the instance until it ends.
    const closeRest = () => {
      stats?.closeSync();
      instance?.closeSync();
    };
    if (this.#statsRead) void this.#statsRead.then(closeRest, closeRest);
    else closeRest();
    this.#conn = undefined;
    this.#statsConn = undefined;
    this.#instance = undefined;
  }
}

/** A batch's leaves, from its head when that is all a caller read (its bytes were checked then), with its series definitions. */
const batchViewOf = (b: ColumnBatchHead): ColumnBatchView =>
  'leaves' in b ? (b as ColumnBatchView) : readColumnBatch(b.bytes, { checked: true, ...(b.defs ? { defs: definitionViews(b.defs) } : {}) });

const definitionViewsOf = new WeakMap<readonly ColumnBatchHead[], ColumnBatchView[]>();
/** One set of views per segment's definitions, however many of its batches a write takes. */
function definitionViews(defs: readonly ColumnBatchHead[]): ColumnBatchView[] {
  let views = definitionViewsOf.get(defs);
  if (!views) definitionViewsOf.set(defs, (views = defs.map(batchViewOf)));
  return views;
}

/** The written file with where its row groups start (read from its footer). */
async function withRowGroupOffsets(w: WrittenFile): Promise<WrittenFile> {
  return { ...w, rowGroupOffsets: rowGroupOffsets(await readParquetFooter(w.path)) };
}

/** Every local file a write produced (to remove once published). */
export const writtenLocalFiles = (w: WrittenFile): string[] => (w.idBlocksPath ? [w.path, w.idBlocksPath] : [w.path]);
