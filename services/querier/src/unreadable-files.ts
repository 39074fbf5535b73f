import { FloeError } from '@floe/errors';
import type { TableName } from '@floe/schema';
import { ObjectNotFoundError, ObjectSizeMismatchError } from '@floe/storage';
import { SandboxError } from './sandbox/index.ts';
import { duckdbMessage, firstLine } from './sandbox/errors.ts';

/**
 * A data file of a table's current snapshot that cannot be read (deleted behind Floe's back, cut
 * short, bit-flipped) fails the queries of that table as its damaged metadata does (file-resolver's
 * readable()): unavailable (503, gRPC UNAVAILABLE) naming the table, the file's object key and the
 * repair, since asking again helps only once an operator has repaired the table. Only a failure
 * that is really about reading one of the files a query was planned over is answered so: what
 * DuckDB says of it names the file (its local path), or, for the damage DuckDB reports without a
 * name (a footer or page header that does not decode), one of the files is found unreadable when
 * read again alone.
 */
export interface DataFile {
  dataset: string;
  table: TableName;
  /** Its object key, as `floe ops check-tables` names it. */
  key: string;
}

export class UnreadableDataFileError extends FloeError {
  readonly file: DataFile;
  readonly missing: boolean;

  constructor(file: DataFile, missing: boolean, cause: unknown) {
    super(
      'unavailable',
      `table ${file.table} of dataset ${file.dataset} cannot be read: its data file ${file.key} is ${missing ? 'missing' : 'damaged'}; it needs an operator's repair (floe ops check-tables)`,
      { code: 'FLOE_ERR_TABLE_UNREADABLE', cause },
    );
    this.file = file;
    this.missing = missing;
  }
}

/**
 * The classes of DuckDB's errors in reading a file (a conversion error quoting a value that looks
 * like a path is still the query's).
 */
const FILE_READ_CLASSES = /^(IO|Invalid Input|Invalid) Error: /;

/** DuckDB's words for a file that is not there (its name is in the text). */
const MISSING = /No files found that match the pattern|No such file or directory|does not exist/i;

/**
 * DuckDB's words for a Parquet file it could not decode that do not name the file: its thrift
 * decoder's (`TProtocolException: Invalid data`, `don't know what type`, `Out of buffer`, …: class
 * "Invalid Error") and the reader's own complaints of corruption.
 */
const UNNAMED_DAMAGE = /^Invalid Error: |corrupt|decompression failure|TProtocolException/i;

/** Reads the whole file at `path` alone; rejects with what DuckDB says when it cannot. */
export type FileProbe = (path: string, timeoutMs: number) => Promise<void>;

/**
 * The first line of the DuckDB error behind a sandbox fault: the lines after it quote the SQL that
 * failed, which for a view lists every file of the view, damaged or not.
 */
function faultText(err: unknown): string | undefined {
  if (!(err instanceof SandboxError) || err.kind !== 'internal' || err.cause === undefined) return undefined;
  return firstLine(duckdbMessage(err.cause));
}

/**
 * Which of the files (by the local path the query read it at) a failed read was about, and
 * whether it was missing; undefined when the failure is not about one of them (a bad query, a
 * timeout, a fault of the querier's own). Files are probed one at a time, and only when DuckDB
 * named none of them.
 */
export async function unreadableFileOf(
  err: unknown,
  paths: readonly string[],
  probe: FileProbe,
  timeoutMs: () => number,
): Promise<{ path: string; missing: boolean } | undefined> {
  const text = faultText(err);
  if (text === undefined || paths.length === 0) return undefined;
  // Longest first: no path is then taken for another that starts with it.
  if (!FILE_READ_CLASSES.test(text)) return undefined;
  const named = [...new Set(paths)].sort((a, b) => b.length - a.length).find((p) => text.includes(p));
  if (named !== undefined) return { path: named, missing: MISSING.test(text) };
  if (!UNNAMED_DAMAGE.test(text)) return undefined;
  for (const path of new Set(paths)) {
    try {
      await probe(path, timeoutMs());
    } catch (probed) {
      // Out of time or memory, nothing is learnt: the query's own error stands.
      const said = faultText(probed);
      if (said === undefined || !FILE_READ_CLASSES.test(said)) return undefined;
      return { path, missing: MISSING.test(said) };
    }
  }
  return undefined;
}

/** Whether fetching a data file from the store into the local cache failed because it is missing or shorter than listed. */
export function unfetchable(err: unknown): { missing: boolean } | undefined {
  if (err instanceof ObjectNotFoundError) return { missing: true };
  if (err instanceof ObjectSizeMismatchError) return { missing: false };
  return undefined;
}
