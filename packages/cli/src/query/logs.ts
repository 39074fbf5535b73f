import type { Command } from 'commander';
import { seg } from '@floe/client';
import { queryVerb } from './verb.ts';
import { registerRuleCommands } from './rules.ts';

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
  registerRuleCommands(logs, { name: 'logs', config: 'logquery/loki/api/v1/rules', state: 'logquery/prometheus/api/v1' });

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

  queryVerb<Window>(
    windowOptions(logs.command('stats').description('streams, chunks, entries and bytes a selector matches in the window').argument('<selector>', 'stream selector, such as {service_name="shop"}')),
    'logs stats',
    ([query], o) => ({ path: `${BASE}/index/stats`, query: { query, start: o.start, end: o.end, since: o.since } }),
  );

  // Bytes per label set (or per label name): an instant vector over the window, or a matrix per --step.
  type Volume = Window & { limit?: string; targetLabels?: string; aggregateBy?: string };
  const volumeOptions = (cmd: Command) =>
    windowOptions(cmd.argument('<selector>', 'stream selector, such as {service_name=~".+"}'))
      .option('--limit <n>', 'most series returned (default 100)')
      .option('--target-labels <labels>', 'comma-separated labels to aggregate by (default the selector’s)')
      .option('--aggregate-by <what>', 'series (bytes per label set, the default) or labels (per label name)');
  const volumeQuery = (query: string | undefined, o: Volume) => ({ query, start: o.start, end: o.end, since: o.since, limit: o.limit, targetLabels: o.targetLabels, aggregateBy: o.aggregateBy });
  queryVerb<Volume>(volumeOptions(logs.command('volume').description('bytes of the log lines in the window per label set or label name')), 'logs volume', ([query], o) => ({
    path: `${BASE}/index/volume`,
    query: volumeQuery(query, o),
  }));
  queryVerb<Volume & { step?: string }>(
    volumeOptions(logs.command('volume-range').description('bytes of the log lines per label set or label name, per step')).option('--step <duration>', 'width of each point, such as 5m'),
    'logs volume-range',
    ([query], o) => ({ path: `${BASE}/index/volume_range`, query: { ...volumeQuery(query, o), step: o.step } }),
  );

  queryVerb<Window & { limit?: string; lineLimit?: string }>(
    windowOptions(logs.command('detected-fields').description('fields of the sampled log lines, with type and cardinality').argument('<logql>', 'LogQL query selecting the lines sampled'))
      .option('--limit <n>', 'most fields returned (default 100)')
      .option('--line-limit <n>', 'log lines sampled (default 1000)'),
    'logs detected-fields',
    ([query], o) => ({ path: `${BASE}/detected_fields`, query: { query, start: o.start, end: o.end, since: o.since, line_limit: o.lineLimit, limit: o.limit } }),
  );

  queryVerb<Window & { limit?: string; lineLimit?: string }>(
    windowOptions(
      logs
        .command('detected-field-values')
        .description('values of one detected field in the sampled log lines')
        .argument('<name>', 'field name, as detected-fields lists it')
        .argument('<logql>', 'LogQL query selecting the lines sampled'),
    )
      .option('--limit <n>', 'most values returned (default 1000)')
      .option('--line-limit <n>', 'log lines sampled (default 1000)'),
    'logs detected-field-values',
    ([name, query], o) => ({ path: `${BASE}/detected_field/${seg(name!)}/values`, query: { query, start: o.start, end: o.end, since: o.since, line_limit: o.lineLimit, limit: o.limit } }),
  );

  queryVerb<Window & { query?: string }>(
    windowOptions(logs.command('detected-labels').description('stream labels in the window with their cardinality')).option('--query <selector>', 'only streams matching this selector'),
    'logs detected-labels',
    (_args, o) => ({ path: `${BASE}/detected_labels`, query: { query: o.query, start: o.start, end: o.end, since: o.since } }),
  );

  queryVerb<Window & { step?: string }>(
    windowOptions(
      logs
        .command('patterns')
        .description('patterns of the newest lines a log query selects in the window, with their lines per step')
        .argument('<logql>', 'LogQL log query, such as {service_name="shop"} |= "GET"'),
    ).option('--step <duration>', 'width of each count, such as 1m'),
    'logs patterns',
    ([query], o) => ({ path: `${BASE}/patterns`, query: { query, start: o.start, end: o.end, since: o.since, step: o.step } }),
  );

  queryVerb(
    logs.command('format-query').description('a LogQL expression in canonical form').argument('<logql>', 'LogQL query'),
    'logs format-query',
    ([query]) => ({ path: `${BASE}/format_query`, query: { query } }),
  );
}
