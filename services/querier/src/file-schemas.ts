import { Lru } from '@floe/storage';

/** A schema key per path, in order (TrustedRunner.schemaKeys). */
export type SchemaProbe = (paths: readonly string[], timeoutMs: number) => Promise<string[]>;

/** Files whose schema is kept; a day of hourly files of every table of many datasets. */
const MAX_FILES = 100_000;
/** Distinct schemas numbered before the numbering starts again (a schema then gets a new number). */
const MAX_SCHEMAS = 10_000;

/**
 * Whether the Parquet files of a view share one schema, so DuckDB can scan them without matching
 * columns by name in each file. Iceberg data files are written once under a new name and never
 * changed, so a path's schema is probed (with DuckDB's parquet_schema) the first time a query
 * reads it and kept. A table's schema changes only by added columns, and then its older files
 * differ from its newer ones: such a view is read by name, as every view was before.
 */
export class FileSchemas {
  readonly #probe: SchemaProbe;
  /** Schema number by path. */
  readonly #ids = new Lru<string, number>(MAX_FILES);
  /** Schema number by schema key (a few kB each): equal numbers are equal schemas. */
  #numbers = new Map<string, number>();
  #next = 0;

  constructor(probe: SchemaProbe) {
    this.#probe = probe;
  }

  /** True when every file has the same schema; false when some differ, or a probe failed. */
  async same(paths: readonly string[], timeoutMs: number): Promise<boolean> {
    if (paths.length <= 1) return true;
    const unknown = paths.filter((p) => this.#ids.get(p) === undefined);
    if (unknown.length > 0) {
      let keys: string[];
      try {
        keys = await this.#probe(unknown, timeoutMs);
      } catch {
        // The query itself reads by name, and reports what is wrong with a file if anything is.
        return false;
      }
      unknown.forEach((p, i) => this.#ids.set(p, this.#number(keys[i]!)));
    }
    const first = this.#ids.get(paths[0]!);
    return first !== undefined && paths.every((p) => this.#ids.get(p) === first);
  }

  #number(key: string): number {
    let n = this.#numbers.get(key);
    if (n === undefined) {
      if (this.#numbers.size >= MAX_SCHEMAS) this.#numbers = new Map();
      this.#numbers.set(key, (n = this.#next++));
    }
    return n;
  }
}
