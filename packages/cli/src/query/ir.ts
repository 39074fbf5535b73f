import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { UsageError } from '../command-helpers.ts';
import { queryVerb } from './verb.ts';

/**
 * `floe query …`: the native Query IR (spec 1 "Query"; README "Native Query IR"). `floe query
 * <ir>` POSTs one query written as JSON to /api/v1/query and prints the answer unchanged; `floe
 * query sources` prints GET /api/v1/query/sources. The IR is run by a default subcommand (`run`)
 * rather than by `query` itself, so `query` holds no options of its own and `floe query sources
 * --tenant t` reaches `sources` with its options, as the other verb groups do.
 */

const BASE = 'api/v1/query';

/**
 * The request body: the operand itself, or the file it names after `@` (`@-`: stdin), as curl's
 * `-d @file` reads it. Parsed here so a typo is a usage error naming the problem rather than the
 * router's 400 about a body it could not read; the IR has no integers beyond 2^53 (times are
 * strings), so sending it re-serialised changes nothing.
 */
function irBody(arg: string): unknown {
  let text = arg;
  if (arg.startsWith('@')) {
    const file = arg.slice(1);
    const what = file === '-' ? 'stdin' : file;
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read the query from ${what}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`the query is not JSON: ${(err as Error).message} (pass the IR as JSON, @file or @- for stdin)`);
  }
}

export function registerQueryIrCommands(program: Command): void {
  const query = program.command('query').description('run a query written in Floe’s native Query IR (POST /api/v1/query)');

  queryVerb(
    query
      .command('run', { isDefault: true })
      .description('run one query (the default: floe query <ir>), such as {"source":"logs","range":{"start":"…","end":"…"},"limit":10}')
      .argument('<ir>', 'the query as JSON, or @file to read it from a file (@- for stdin)'),
    'query',
    ([ir]) => ({ method: 'POST', path: BASE, body: irBody(ir!) }),
  );

  queryVerb(query.command('sources').description('the sources a query can read: each table’s fields and types and the body fields each source takes'), 'query sources', () => ({
    path: `${BASE}/sources`,
  }));
}
