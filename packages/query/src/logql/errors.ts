import { FloeError } from '@floe/errors';

/** 1-based line and column (in UTF-16 code units, like an editor's) of an offset in the query. */
export function positionOf(src: string, offset: number): { line: number; column: number; offset: number } {
  const before = src.slice(0, Math.max(0, Math.min(offset, src.length)));
  const lines = before.split('\n');
  return { line: lines.length, column: lines[lines.length - 1]!.length + 1, offset };
}

/** A bad_data parse error in Loki's words: `parse error at line 1, col 8: <reason>`. */
export function syntaxError(src: string, offset: number, reason: string): FloeError {
  const position = positionOf(src, offset);
  return new FloeError('bad_data', `parse error at line ${position.line}, col ${position.column}: ${reason}`, { code: 'FLOE_ERR_LOGQL_PARSE', position });
}

/** A construct that parses but Floe cannot run yet: 501 not_implemented, with its position. */
export function unsupported(src: string, offset: number, what: string): FloeError {
  const position = positionOf(src, offset);
  return new FloeError('not_implemented', `${what} is not supported yet (line ${position.line}, col ${position.column})`, { code: 'FLOE_ERR_LOGQL_UNSUPPORTED', position });
}
