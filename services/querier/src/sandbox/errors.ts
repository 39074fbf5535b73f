/**
 * The one error type the sandbox throws. `kind` tells the caller how to answer:
 * - `bad_sql`: the query is wrong (parse, bind, type, parameter, memory-limit errors) → 400/422
 * - `forbidden`: the query tried something the sandbox does not allow → 403
 * - `timeout`: the deadline passed and the query was interrupted → 504
 * - `internal`: a genuine fault (bad setup, I/O failure, DuckDB internal error) → 500
 *
 * Messages are client-safe: absolute data-file paths are replaced with `<file>`.
 */
export type SandboxErrorKind = 'bad_sql' | 'forbidden' | 'timeout' | 'internal';

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
 * Replaces every occurrence of the given absolute paths (and anything under their directories)
 * with `<file>`. Longest first, so a file is replaced before its directory.
 */
export function makeScrubber(paths: readonly string[]): (message: string) => string {
  const files = [...new Set(paths.filter((p) => p.length > 0))].sort((a, b) => b.length - a.length);
  const dirs = [...new Set(files.map(dirOf).filter((d) => d.length > 1))].sort((a, b) => b.length - a.length);
  const dirPatterns = dirs.map((d) => new RegExp(`${escapeRegExp(d)}(?:/[^\\s'"\\]\\),]*)?`, 'g'));
  return (message) => {
    let out = message;
    for (const f of files) out = out.split(f).join('<file>');
    for (const re of dirPatterns) out = out.replace(re, '<file>');
    return out;
  };
}

function dirOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '' : path.slice(0, i);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The error's text without the node-api prefixes ("Failed to extract statements: …"). */
export function duckdbMessage(err: unknown): string {
  const raw = err instanceof Error ? err.message : String(err);
  return raw.replace(/^Failed to [^:]{1,60}: /, '').trim();
}

export interface ErrorContext {
  timedOut: boolean;
  timeoutMs: number;
  scrub: (message: string) => string;
}

/** Maps anything DuckDB (or node-api) threw to a SandboxError. SandboxErrors pass through. */
export function toSandboxError(err: unknown, ctx: ErrorContext): SandboxError {
  if (err instanceof SandboxError) return err;
  const message = duckdbMessage(err);
  if (ctx.timedOut || /^INTERRUPT Error/i.test(message)) {
    return new SandboxError('timeout', `query exceeded the time limit of ${ctx.timeoutMs} ms`, { cause: err });
  }
  const cls = /^([A-Za-z ]+ Error): /.exec(message)?.[1]?.toLowerCase() ?? '';
  if (cls === 'permission error') return new SandboxError('forbidden', MSG_FILE_ACCESS, { cause: err });
  if (BAD_SQL_CLASSES.has(cls)) return new SandboxError('bad_sql', ctx.scrub(message), { cause: err });
  return new SandboxError('internal', `query failed: ${ctx.scrub(message)}`, { cause: err });
}
