import { randomUUID } from 'node:crypto';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { parquetFieldIds, quoteIdent, readJsonColumns, selectStoredColumns, type TableDef } from '@floe/schema';

/**
 * Writes sorted, zstd Parquet files with Iceberg field ids using DuckDB, from either NDJSON row
 * payloads (as the acceptor wrote them to the WAL: rows go in through read_json, no per-row
 * JavaScript) or existing Parquet files (compaction). The sort and the encoding run in native
 * code (reference/storage.md §1). Each written file reports the statistics its Iceberg manifest
 * entry and its id filter need.
 */
export interface WrittenFile {
  path: string;
  sizeBytes: number;
  rowCount: number;
  minStartNs: bigint;
  maxStartNs: bigint;
  minTimestampUs: bigint;
  maxTimestampUs: bigint;
  /** Distinct values of the table's id column (for the per-file id filter). */
  ids: string[];
}

const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** DuckDB's own default, for tables that don't set TableDef.rowGroupSize. */
const DEFAULT_ROW_GROUP_SIZE = 122_880;

export class ParquetWriter {
  readonly #dir: string;
  #instance: DuckDBInstance | undefined;
  #conn: DuckDBConnection | undefined;

  constructor(workDir: string) {
    this.#dir = workDir;
  }

  async #connection(): Promise<DuckDBConnection> {
    if (!this.#conn) {
      await mkdir(this.#dir, { recursive: true });
      this.#instance = await DuckDBInstance.create(':memory:', { threads: '2', memory_limit: '2GB', temp_directory: join(this.#dir, 'duckdb-tmp') });
      this.#conn = await this.#instance.connect();
    }
    return this.#conn;
  }

  /** NDJSON rows (one JSON object per line, raw column layout) → one stored-layout file. */
  async write(table: TableDef, payloads: readonly Uint8Array[]): Promise<WrittenFile> {
    await this.#connection();
    const input = join(this.#dir, `${randomUUID()}.ndjson`);
    await writeFile(input, payloads);
    try {
      return await this.#copy(
        table,
        `SELECT ${selectStoredColumns(table)} FROM read_json(${literal(input)}, format = 'newline_delimited', columns = ${readJsonColumns(table)}, maximum_object_size = 67108864)`,
      );
    } finally {
      await rm(input, { force: true });
    }
  }

  /** Existing stored-layout Parquet files → one file in canonical order (compaction). */
  async rewrite(table: TableDef, files: readonly string[]): Promise<WrittenFile> {
    const cols = table.columns.map((c) => quoteIdent(c.name)).join(', ');
    return this.#copy(table, `SELECT ${cols} FROM read_parquet([${files.map(literal).join(', ')}], union_by_name = true)`);
  }

  /**
   * Any SELECT that yields the table's stored columns → one file in canonical order (used to
   * generate benchmark data through the same encoding path).
   */
  writeQuery(table: TableDef, select: string): Promise<WrittenFile> {
    return this.#copy(table, select);
  }

  async #copy(table: TableDef, source: string): Promise<WrittenFile> {
    const conn = await this.#connection();
    const output = join(this.#dir, `${randomUUID()}.parquet`);
    try {
      const order = table.sortOrder.map(quoteIdent).join(', ');
      await conn.run(
        `COPY (${source} ORDER BY ${order}) ` +
          `TO ${literal(output)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${table.rowGroupSize ?? DEFAULT_ROW_GROUP_SIZE}, FIELD_IDS ${parquetFieldIds(table)})`,
      );
      const src = `read_parquet(${literal(output)})`;
      const statsReader = await conn.runAndReadAll(
        `SELECT count(*)::BIGINT, min(start_time_unix_nano), max(start_time_unix_nano), epoch_us(min("timestamp")), epoch_us(max("timestamp")) FROM ${src}`,
      );
      const [n, minNs, maxNs, minUs, maxUs] = statsReader.getRows()[0]! as [bigint, bigint, bigint, bigint, bigint];
      let ids: string[] = [];
      if (table.idColumn) {
        const idReader = await conn.runAndReadAll(`SELECT DISTINCT ${quoteIdent(table.idColumn)} FROM ${src}`);
        ids = idReader.getRows().map((r) => String(r[0]));
      }
      const { size } = await stat(output);
      return { path: output, sizeBytes: size, rowCount: Number(n), minStartNs: minNs, maxStartNs: maxNs, minTimestampUs: minUs, maxTimestampUs: maxUs, ids };
    } catch (err) {
      await rm(output, { force: true });
      throw err;
    }
  }

  close(): void {
    this.#conn?.closeSync();
    this.#instance?.closeSync();
    this.#conn = undefined;
    this.#instance = undefined;
  }
}
