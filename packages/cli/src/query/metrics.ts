import type { Command } from 'commander';
import { UsageError } from '../command-helpers.ts';
import { seg } from '@floe/client';
import { repeatable } from '../command-helpers.ts';
import { queryVerb } from './verb.ts';
import { registerRuleCommands } from './rules.ts';

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
const limitOption = (cmd: Command, what: string) => cmd.option('--limit <n>', `most ${what} (0 or absent: all); a cut list carries the warning "results truncated due to limit"`);

/** The evaluation options of query and query-range (Prometheus 3's limit, timeout and lookback_delta). */
interface Evaluation {
  limit?: string;
  timeout?: string;
  lookbackDelta?: string;
}
const evaluationOptions = (cmd: Command) =>
  limitOption(cmd, 'series')
    .option('--timeout <duration>', 'evaluation timeout, such as 10s (at most the router’s query timeout)')
    .option('--lookback-delta <duration>', 'lookback of instant selectors, such as 1m (default 5m)');
const evaluation = (o: Evaluation) => ({ limit: o.limit, timeout: o.timeout, lookback_delta: o.lookbackDelta });

export function registerMetricCommands(program: Command): void {
  const metrics = program.command('metrics').description('query metrics with PromQL (the /metricquery API)');
  registerRuleCommands(metrics, { name: 'metrics', config: 'metricquery/config/v1/rules', state: BASE });

  queryVerb<Evaluation & { time?: string }>(
    evaluationOptions(metrics.command('query').description('instant query at --time').argument('<promql>', 'PromQL expression').option('--time <time>', 'evaluation time (default now)')),
    'metrics query',
    ([query], o) => ({ path: `${BASE}/query`, query: { query, time: o.time, ...evaluation(o) } }),
  );

  queryVerb<Evaluation & { start?: string; end?: string; step?: string }>(
    evaluationOptions(
      metrics
        .command('query-range')
        .description('range query from --start to --end every --step')
        .argument('<promql>', 'PromQL expression')
        .option('--start <time>', 'range start (required)')
        .option('--end <time>', 'range end (required)')
        .option('--step <duration>', 'resolution, such as 30s (required)'),
    ),
    'metrics query-range',
    ([query], o) => {
      // A usage mistake (exit 2) rather than the router's 400: the command line is what to fix.
      if (!o.start || !o.end || !o.step) throw new UsageError('--start, --end and --step are required');
      return { path: `${BASE}/query_range`, query: { query, start: o.start, end: o.end, step: o.step, ...evaluation(o) } };
    },
  );

  queryVerb<Window & { limit?: string }>(
    limitOption(windowOptions(metrics.command('labels').description('label names of the series in the window')), 'names'),
    'metrics labels',
    (_args, o) => ({ path: `${BASE}/labels`, query: { start: o.start, end: o.end, 'match[]': o.match, limit: o.limit } }),
  );

  queryVerb<Window & { limit?: string }>(
    limitOption(windowOptions(metrics.command('label-values').description('values of one label in the window').argument('<name>', 'label name, such as job or __name__')), 'values'),
    'metrics label-values',
    ([name], o) => ({ path: `${BASE}/label/${seg(name!)}/values`, query: { start: o.start, end: o.end, 'match[]': o.match, limit: o.limit } }),
  );

  queryVerb<Omit<Window, 'match'> & { limit?: string }>(
    limitOption(
      metrics
        .command('series')
        .description('label sets of the series matching any selector')
        .argument('<match...>', 'series selectors, such as up or {job="api"}')
        .option('--start <time>', 'window start (unix s or RFC3339)')
        .option('--end <time>', 'window end (unix s or RFC3339)'),
      'series',
    ),
    'metrics series',
    (matches, o) => ({ path: `${BASE}/series`, query: { 'match[]': matches, start: o.start, end: o.end, limit: o.limit } }),
  );

  queryVerb<Omit<Window, 'match'> & { limit?: string; limitPerMetric?: string }>(
    timeWindow(metrics.command('metadata').description('type, help and unit of the metric families in the window').argument('[metric]', 'only this metric family, such as http_requests_total'))
      .option('--limit <n>', 'most metric families (0 or absent: all)')
      .option('--limit-per-metric <n>', 'most entries per family (0 or absent: all)'),
    'metrics metadata',
    ([metric], o) => ({ path: `${BASE}/metadata`, query: { metric, start: o.start, end: o.end, limit: o.limit, limit_per_metric: o.limitPerMetric } }),
  );

  queryVerb<Omit<Window, 'match'> & { timeout?: string }>(
    timeWindow(metrics.command('query-exemplars').description('exemplars of the series a PromQL expression selects in the window').argument('<promql>', 'PromQL expression')).option(
      '--timeout <duration>',
      'evaluation timeout, such as 10s (at most the router’s query timeout)',
    ),
    'metrics query-exemplars',
    ([query], o) => ({ path: `${BASE}/query_exemplars`, query: { query, start: o.start, end: o.end, timeout: o.timeout } }),
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
