import type { Command } from 'commander';
import { action, connectionOf, requireTenant, tenantOption, withConnection, type ConnectionFlags } from '../command-helpers.ts';
import { callApiText, type QueryParams } from '@floe/client';

/**
 * One query verb: a request to the router built from the command line (URL parameters, and for
 * the native Query IR a JSON body), whose answer is printed exactly as the router sent it (spec
 * 1, profile query rule 5: "prints the native JSON response unchanged"), so `floe … | jq` sees
 * what Grafana would: parsing and re-serialising would round integers beyond 2^53 and respell
 * numbers.
 */

export interface QueryFlags extends ConnectionFlags {
  tenant?: string;
  dataset?: string;
}

/** The request a verb makes: a path relative to the router URL and its query string. */
export interface QueryRequest {
  path: string;
  query?: QueryParams;
  /** GET unless the verb changes something (the deletion APIs) or sends a body (the Query IR). */
  method?: 'GET' | 'POST' | 'DELETE';
  /** A JSON body (sent with Content-Type application/json). */
  body?: unknown;
  /** A body sent as it is (a rule group's YAML). */
  rawBody?: { text: string; contentType: string };
}

/**
 * Adds the connection, tenant and dataset options to `cmd` and makes it run `request`. `args` are
 * the command's operands in order (a variadic operand's values flattened in), `opts` its options.
 */
export function queryVerb<O extends object>(cmd: Command, name: string, request: (args: string[], opts: O & QueryFlags) => QueryRequest): void {
  tenantOption(withConnection(cmd))
    .option('--dataset <id>', 'dataset (env FLOE_DATASET; the tenant’s default when absent)', process.env.FLOE_DATASET)
    .action(
      action(name, async (...argv: unknown[]) => {
        const command = argv.at(-1) as Command;
        const opts = command.opts<O & QueryFlags>();
        const tenant = requireTenant(opts.tenant);
        const req = request(command.args, opts);
        const { text } = await callApiText(connectionOf(opts, { tenant, dataset: opts.dataset }), req.method ?? 'GET', req.path, { query: req.query, body: req.body, ...(req.rawBody ? { rawBody: req.rawBody } : {}) });
        // A 204 (a deletion recorded) prints nothing.
        if (text !== '') process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
      }),
    );
}

