import type { Command } from 'commander';
import { UsageError } from '../command-helpers.ts';
import { seg } from '@floe/client';
import { repeatable } from '../command-helpers.ts';
import { queryVerb } from './verb.ts';

/**
 * `floe metrics …`: the Prometheus-compatible query API under /metricquery/api/v1. Times are
 * unix seconds (fractions allowed) or RFC3339, steps a duration or a number of seconds, as
 * Prometheus reads them.
 */

const BASE = 'metricquery/api/v1';

interface Window {
  start?: string;
  end?: string;
  match?: string[];
}

const timeWindow = (cmd: Command) => cmd.option('--start <time>', 'window start (unix s or RFC3339)').option('--end <time>', 'window end (unix s or RFC3339)');
const windowOptions = (cmd: Command) => timeWindow(cmd).option('--match <selector>', 'only series matching this selector (repeatable)', repeatable);

export function registerMetricCommands(program: Command): void {
  const metrics = program.command('metrics').description('query metrics with PromQL (the /metricquery API)');

  queryVerb<{ time?: string }>(
    metrics.command('query').description('instant query at --time').argument('<promql>', 'PromQL expression').option('--time <time>', 'evaluation time (default now)'),
    'metrics query',
    ([query], o) => ({ path: `${BASE}/query`, query: { query, time: o.time } }),
  );

  queryVerb<{ start?: string; end?: string; step?: string }>(
    metrics
      .command('query-range')
      .description('range query from --start to --end every --step')
      .argument('<promql>', 'PromQL expression')
      .option('--start <time>', 'range start (required)')
      .option('--end <time>', 'range end (required)')
      .option('--step <duration>', 'resolution, such as 30s (required)'),
    'metrics query-range',
    ([query], o) => {
      // A usage mistake (exit 2) rather than the router's 400: the command line is what to fix.
      if (!o.start || !o.end || !o.step) throw new UsageError('--start, --end and --step are required');
      return { path: `${BASE}/query_range`, query: { query, start: o.start, end: o.end, step: o.step } };
    },
  );

  queryVerb<Window>(
    windowOptions(metrics.command('labels').description('label names of the series in the window')),
    'metrics labels',
    (_args, o) => ({ path: `${BASE}/labels`, query: { start: o.start, end: o.end, 'match[]': o.match } }),
  );

  queryVerb<Window>(
    windowOptions(metrics.command('label-values').description('values of one label in the window').argument('<name>', 'label name, such as job or __name__')),
    'metrics label-values',
    ([name], o) => ({ path: `${BASE}/label/${seg(name!)}/values`, query: { start: o.start, end: o.end, 'match[]': o.match } }),
  );

  queryVerb<Omit<Window, 'match'>>(
    metrics
      .command('series')
      .description('label sets of the series matching any selector')
      .argument('<match...>', 'series selectors, such as up or {job="api"}')
      .option('--start <time>', 'window start (unix s or RFC3339)')
      .option('--end <time>', 'window end (unix s or RFC3339)'),
    'metrics series',
    (matches, o) => ({ path: `${BASE}/series`, query: { 'match[]': matches, start: o.start, end: o.end } }),
  );

  queryVerb<Omit<Window, 'match'> & { limit?: string; limitPerMetric?: string }>(
    timeWindow(metrics.command('metadata').description('type, help and unit of the metric families in the window').argument('[metric]', 'only this metric family, such as http_requests_total'))
      .option('--limit <n>', 'most metric families')
      .option('--limit-per-metric <n>', 'most entries per family'),
    'metrics metadata',
    ([metric], o) => ({ path: `${BASE}/metadata`, query: { metric, start: o.start, end: o.end, limit: o.limit, limit_per_metric: o.limitPerMetric } }),
  );

  queryVerb<Omit<Window, 'match'>>(
    timeWindow(metrics.command('query-exemplars').description('exemplars of the series a PromQL expression selects in the window').argument('<promql>', 'PromQL expression')),
    'metrics query-exemplars',
    ([query], o) => ({ path: `${BASE}/query_exemplars`, query: { query, start: o.start, end: o.end } }),
  );

  queryVerb<Omit<Window, 'match'> & { limit?: string }>(
    timeWindow(metrics.command('tsdb-status').description('series cardinality in the window: series per metric name, values per label name, series per label pair')).option(
      '--limit <n>',
      'entries per list (default 10)',
    ),
    'metrics tsdb-status',
    (_args, o) => ({ path: `${BASE}/status/tsdb`, query: { limit: o.limit, start: o.start, end: o.end } }),
  );

  queryVerb(
    metrics.command('format-query').description('a PromQL expression, formatted').argument('<promql>', 'PromQL expression'),
    'metrics format-query',
    ([query]) => ({ path: `${BASE}/format_query`, query: { query } }),
  );

  queryVerb(
    metrics.command('parse-query').description('a PromQL expression’s syntax tree').argument('<promql>', 'PromQL expression'),
    'metrics parse-query',
    ([query]) => ({ path: `${BASE}/parse_query`, query: { query } }),
  );

  queryVerb<Omit<Window, 'match'>>(
    metrics
      .command('delete-series')
      .description('delete the samples and exemplars of the series matching any selector in a window, within seconds and for good (needs the delete scope)')
      .argument('<match...>', 'series selectors, such as up{job="api"}')
      .option('--start <time>', 'window start (unix s or RFC3339; default 1970)')
      .option('--end <time>', 'window end (unix s or RFC3339; default a day from now)'),
    'metrics delete-series',
    (matches, o) => ({ method: 'POST', path: `${BASE}/admin/tsdb/delete_series`, query: { 'match[]': matches, start: o.start, end: o.end } }),
  );
}
