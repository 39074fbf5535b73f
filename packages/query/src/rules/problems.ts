import { FloeError } from '@floe/errors';

/**
 * Problems found in a rule file, gathered rather than thrown one at a time so that a user fixing
 * a file sees all of them at once, as `promtool check rules` lists them. They become one FloeError
 * bad_data (the class and kind of PromQL parse errors), positioned at the first.
 */

export interface Position {
  line: number;
  column: number;
}

export interface Problem {
  message: string;
  at?: Position | undefined;
}

export const RULES_ERROR_CODE = 'FLOE_ERR_RULES_INVALID';

/** Past this many, the rest are counted, not listed: one message stays readable. */
const MAX_LISTED = 20;

export function rulesError(problems: readonly Problem[]): FloeError {
  const listed = problems.slice(0, MAX_LISTED).map((p) => p.message);
  if (problems.length > MAX_LISTED) listed.push(`(and ${problems.length - MAX_LISTED} more problems)`);
  const at = problems.find((p) => p.at !== undefined)?.at;
  return new FloeError('bad_data', listed.join('; '), { code: RULES_ERROR_CODE, ...(at ? { position: at } : {}) });
}

/** The message of whatever a callback threw (a template engine's error, say). */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
