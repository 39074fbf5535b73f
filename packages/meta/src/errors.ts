// Errors raised by the metadata layer. `@floe/errors` (FloeError and its closed set of kinds) is being
// written concurrently; until it lands, the kinds this package can produce live here and the caller
// (router, CLI) maps them: conflict → 409, not_found → 404, bad_data → 400. Anything else thrown from
// this package (connection loss, an aborted transaction) is a genuine fault and should become a 500.

export type MetaErrorKind = 'conflict' | 'not_found' | 'bad_data';

export class MetaError extends Error {
  readonly kind: MetaErrorKind;

  constructor(kind: MetaErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MetaError';
    this.kind = kind;
  }
}

export function isMetaError(err: unknown, kind?: MetaErrorKind): err is MetaError {
  return err instanceof MetaError && (kind === undefined || err.kind === kind);
}

/** SQLSTATE of a driver error (pg's DatabaseError and PGlite's both carry `.code`). */
export function sqlState(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    if (typeof code === 'string' && code.length === 5) return code;
  }
  return undefined;
}

/**
 * Translate constraint violations that can still slip through (races between the existence checks
 * and the write) into MetaErrors; rethrow everything else untouched.
 */
export function mapConstraintError(err: unknown, what: string): never {
  switch (sqlState(err)) {
    case '23505': // unique_violation
      throw new MetaError('conflict', `${what} already exists`, { cause: err });
    case '23503': // foreign_key_violation
      throw new MetaError('not_found', `${what}: referenced record does not exist`, { cause: err });
    case '23514': // check_violation
    case '22P02': // invalid_text_representation
    case '22001': // string_data_right_truncation
      throw new MetaError('bad_data', `${what}: invalid value`, { cause: err });
    default:
      throw err;
  }
}
