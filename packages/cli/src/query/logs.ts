import type { Command } from 'commander';
import { seg } from '@floe/client';
import { queryVerb } from './verb.ts';

/**
 * `floe logs …`: the Loki-compatible log query API under /logquery/api/v1 (spec 1, "Log query
 * API"). Times are passed through as given: unix nanoseconds, unix seconds or RFC3339; `since`
 * and `step` are durations such as 30s.
 */

const BASE = 'logquery/api/v1';

interface Window {
  start?: string;
  end?: string;
  since?: string;
}

const windowOptions = (cmd: Command) =>
  cmd
    .option('--start <time>', 'window start (unix ns, unix s or RFC3339; default end minus --since or 1h)')
    .option('--end <time>', 'window end (default now)')
    .option('--since <duration>', 'window length before --end when --start is absent, such as 15m');

export function registerLogCommands(program: Command): void {
  const logs = program.command('logs').description('query logs with LogQL (the /logquery API)');

  queryVerb<{ limit?: string; time?: string; direction?: string }>(
    logs
      .command('query')
      .description('instant query: the most recent lines of the hour ending at --time')
      .argument('<logql>', 'LogQL query')
      .option('--limit <n>', 'maximum lines')
      .option('--time <time>', 'evaluation time (default now)')
      .option('--direction <dir>', 'forward or backward'),
    'logs query',
    ([query], o) => ({ path: `${BASE}/query`, query: { query, limit: o.limit, time: o.time, direction: o.direction } }),
  );

  queryVerb<Window & { step?: string; limit?: string; direction?: string }>(
    windowOptions(
      logs
        .command('query-range')
        .description('range query: streams for a log query, a matrix for a metric query')
        .argument('<logql>', 'LogQL query'),
    )
      .option('--step <duration>', 'resolution of a metric query, such as 30s')
      .option('--limit <n>', 'maximum lines')
      .option('--direction <dir>', 'forward or backward'),
    'logs query-range',
    ([query], o) => ({ path: `${BASE}/query_range`, query: { query, start: o.start, end: o.end, since: o.since, step: o.step, limit: o.limit, direction: o.direction } }),
  );

  queryVerb<Window & { query?: string }>(
    windowOptions(logs.command('labels').description('label names in the window')).option('--query <selector>', 'only streams matching this selector'),
    'logs labels',
    (_args, o) => ({ path: `${BASE}/labels`, query: { start: o.start, end: o.end, since: o.since, query: o.query } }),
  );

  queryVerb<Window & { query?: string }>(
    windowOptions(logs.command('label-values').description('distinct values of one label in the window').argument('<name>', 'label name')).option(
      '--query <selector>',
      'only streams matching this selector',
    ),
    'logs label-values',
    ([name], o) => ({ path: `${BASE}/label/${seg(name!)}/values`, query: { start: o.start, end: o.end, since: o.since, query: o.query } }),
  );

  queryVerb<{ start: string; end?: string }>(
    logs
      .command('delete')
      .description('request deletion of the lines a log query selects in a window (needs a key with the delete scope); queries leave them out at once')
      .argument('<logql>', 'LogQL log query, such as {service_name="shop"} |= "card="')
      .requiredOption('--start <time>', 'window start (unix s or RFC3339)')
      .option('--end <time>', 'window end, included (default now)'),
    'logs delete',
    ([query], o) => ({ method: 'POST', path: `${BASE}/delete`, query: { query, start: o.start, end: o.end } }),
  );
  queryVerb(logs.command('delete-requests').description('the delete requests of the dataset, received or processed'), 'logs delete-requests', () => ({ path: `${BASE}/delete` }));
  queryVerb(
    logs.command('cancel-delete').description('cancel a delete request no compactor has taken up yet').argument('<request_id>', 'as delete-requests lists it'),
    'logs cancel-delete',
    ([id]) => ({ method: 'DELETE', path: `${BASE}/delete`, query: { request_id: id } }),
  );

  queryVerb<Window>(
    windowOptions(logs.command('series').description('label sets of the streams matching any selector').argument('<selector...>', 'stream selectors, such as {service_name="shop"}')),
    'logs series',
    (selectors, o) => ({ path: `${BASE}/series`, query: { 'match[]': selectors, start: o.start, end: o.end, since: o.since } }),
  );
}
