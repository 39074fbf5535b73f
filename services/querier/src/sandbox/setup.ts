import type { DuckDBConnection } from '@duckdb/node-api';
import { SandboxError, cancelledError, duckdbMessage, firstLine } from './errors.ts';
import type { Deadline } from './execute.ts';

/**
 * Runs trusted setup statements as one script, after checking that the script parses to exactly
 * as many statements as were written (so a column-list DDL can't smuggle in another statement).
 */
export async function runScript(conn: DuckDBConnection, statements: readonly string[]): Promise<void> {
  const script = statements.join(';\n');
  const extracted = await conn.extractStatements(script);
  if (extracted.count !== statements.length) throw new SandboxError('internal', 'setup SQL has an unexpected statement count');
  await conn.run(script);
}

/** Setup failures are Floe's fault (bad DDL, missing file), never the user's: internal, unless the deadline passed. */
export async function setupStep<T>(step: () => Promise<T>, deadline: Deadline, scrub: (m: string) => string): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof SandboxError) throw err;
    if (deadline.cancelled) throw cancelledError(err);
    if (deadline.timedOut) throw new SandboxError('timeout', `query exceeded the time limit of ${deadline.timeoutMs} ms`, { cause: err });
    throw new SandboxError('internal', `sandbox setup failed: ${scrub(firstLine(duckdbMessage(err)))}`, { cause: err });
  }
}
