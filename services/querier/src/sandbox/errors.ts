/**
 * The one error type the sandbox throws. `kind` tells the caller how to answer:
 * - `bad_sql`: the query is wrong (parse, bind, type, parameter, memory-limit errors) → 400/422
 * - `forbidden`: the query tried something the sandbox does not allow → 403
 * - `timeout`: the deadline passed and the query was interrupted → 504
 * - `too_large`: the result passed querier.max_result_mb → 422 (INVALID_ARGUMENT over Flight: asking again
 *   cannot help, where RESOURCE_EXHAUSTED would invite a retry)
 * - `canceled`: the caller went away (its Flight call was cancelled) and the query was interrupted → 499
 * - `internal`: a genuine fault (bad setup, I/O failure, a damaged data file, DuckDB internal error) → 500;
 *   the query handler answers a damaged or missing data file of the caller's table 503 (unreadable-files.ts)
 *
 * Messages are client-safe: absolute data-file paths are replaced with `<file>`.
 */
export type SandboxErrorKind = 'bad_sql' | 'forbidden' | 'timeout' | 'too_large' | 'canceled' | 'internal';

export class SandboxError extends Error {
  readonly kind: SandboxErrorKind;

  constructor(kind: SandboxErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandboxError';
    this.kind = kind;
  }
}

export const MSG_SINGLE_SELECT = 'only a single SELECT statement is allowed';
export const MSG_FILE_ACCESS = 'access to files outside your tables is not allowed';

/** DuckDB error classes (the text before the first ': ') that mean "the query is wrong". */
const BAD_SQL_CLASSES = new Set([
  'parser error',
  'syntax error',
  'binder error',
  'catalog error',
  'conversion error',
  'invalid input error',
  'out of range error',
  'not implemented error',
  'constraint error',
  'out of memory error',
  'mismatch type error',
  'invalid type error',
  'type error',
  'decimal error',
  'expression error',
  'parameter not resolved error',
  'parameter not allowed error',
  'division by zero error',
]);

/**
 * Replaces the given absolute paths with `<file>`: each path exactly, then anything that starts with
 * one of their ancestor directories two or more levels deep (`/data/acme…`, which also catches the
 * truncated paths DuckDB prints in its `LINE 1: …` excerpts). Longest first.
 */
export function makeScrubber(paths: readonly string[]): (message: string) => string {
  // Built at the first message: most calls end without one, and a view may name hundreds of files.
  let scrub: ((message: string) => string) | undefined;
  return (message) => (scrub ??= buildScrubber(paths))(message);
}

function buildScrubber(paths: readonly string[]): (message: string) => string {
  const files = [...new Set(paths.filter((p) => p.startsWith('/')))].sort((a, b) => b.length - a.length);
  const prefixes = new Set<string>();
  for (const f of files) {
    const parts = f.split('/');
    for (let depth = 2; depth < parts.length; depth++) prefixes.add(parts.slice(0, depth + 1).join('/'));
  }
  const pattern =
    prefixes.size === 0
      ? undefined
      : new RegExp(`(?:${[...prefixes].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|')})[^\\s'"\\]\\),]*`, 'g');
  return (message) => {
    let out = message;
    for (const f of files) out = out.split(f).join('<file>');
    return pattern ? out.replace(pattern, '<file>') : out;
  };
}

/** First line only: DuckDB's `LINE 1: …` excerpt of a setup statement would show Floe's own SQL. */
export function firstLine(message: string): string {
  const i = message.indexOf('\n');
  return i < 0 ? message : message.slice(0, i);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export const cancelledError = (cause?: unknown) => new SandboxError('canceled', 'the query was cancelled by its caller', { cause });

/** The error's text without the node-api prefixes ("Failed to extract statements: …"). */
export function duckdbMessage(err: unknown): string {
  const raw = err instanceof Error ? err.message : String(err);
  return raw.replace(/^Failed to [^:]{1,60}: /, '').trim();
}

export interface ErrorContext {
  timedOut: boolean;
  /** The caller cancelled: whatever the interrupted work threw, that is the answer. */
  cancelled?: boolean;
  timeoutMs: number;
  scrub: (message: string) => string;
}

/** Maps anything DuckDB (or node-api) threw to a SandboxError. SandboxErrors pass through. */
export function toSandboxError(err: unknown, ctx: ErrorContext): SandboxError {
  if (err instanceof SandboxError) return err;
  if (ctx.cancelled === true) return cancelledError(err);
  // JavaScript cannot hold the value (a string past V8's 512 MiB, an array past its length):
  // the query asked for more than can be returned, which is not the querier's fault.
  // Node's TextDecoder, which reads DuckDB's text values, throws a plain Error (ERR_STRING_TOO_LONG) for it.
  const tooLong = err instanceof RangeError || (err instanceof Error && (err as { code?: unknown }).code === 'ERR_STRING_TOO_LONG');
  if (tooLong && /string longer than|Invalid string length|Invalid array length|allocation failed/i.test(err.message)) {
    return new SandboxError('bad_sql', 'a value of the result is too large to return; select less (substr, list_slice, a LIMIT)', { cause: err });
  }
  const message = duckdbMessage(err);
  if (ctx.timedOut || /^INTERRUPT Error/i.test(message)) {
    return new SandboxError('timeout', `query exceeded the time limit of ${ctx.timeoutMs} ms`, { cause: err });
  }
  const cls = /^([A-Za-z ]+ Error): /.exec(message)?.[1]?.toLowerCase() ?? '';
  if (cls === 'permission error') return new SandboxError('forbidden', MSG_FILE_ACCESS, { cause: err });
  const scrubbed = ctx.scrub(message);
  // A complaint naming one of the table's files (a Parquet file cut short or damaged in the
  // store) is about stored data, which the query cannot name: Floe's fault, not a bad query.
  const aboutStoredFile = scrubbed !== message && cls !== 'out of memory error';
  if (BAD_SQL_CLASSES.has(cls) && !aboutStoredFile) return new SandboxError('bad_sql', scrubbed, { cause: err });
  return new SandboxError('internal', `query failed: ${scrubbed}`, { cause: err });
}
