import type { Command } from 'commander';
import { seg } from '@floe/client';
import { queryVerb } from './verb.ts';

/**
 * `floe traces …`: the Tempo-compatible trace API under /tracequery (spec 1, "Trace query API").
 * Times are unix seconds. `get` asks for JSON; `get`, `tags` and `tag-values` take --v2 for the v2
 * answer shapes.
 */

const BASE = 'tracequery/api';

interface Window {
  start?: string;
  end?: string;
}

const windowOptions = (cmd: Command) =>
  cmd.option('--start <seconds>', 'window start, unix seconds (default end minus 1h)').option('--end <seconds>', 'window end, unix seconds (default now)');

export function registerTraceCommands(program: Command): void {
  const traces = program.command('traces').description('query traces with TraceQL (the /tracequery API)');

  queryVerb<Window & { includeProfiles?: boolean; v2?: boolean }>(
    traces
      .command('get')
      .description('one trace by id')
      .argument('<trace_id>', 'up to 32 hex digits')
      .option('--start <seconds>', 'earliest start, unix seconds (narrows the partitions read)')
      .option('--end <seconds>', 'latest end, unix seconds')
      .option('--include-profiles', 'add "profiles": the summaries of the profiles linked to the trace')
      .option('--v2', 'Tempo’s v2 shape, {"trace": {"resourceSpans": […]}} (/api/v2/traces/{id})'),
    'traces get',
    ([id], o) => ({ path: `${BASE}/${o.v2 ? 'v2/' : ''}traces/${seg(id!)}`, query: { start: o.start, end: o.end, include_profiles: o.includeProfiles ? 'true' : undefined } }),
  );

  queryVerb<Window & { tags?: string; limit?: string; spss?: string; minDuration?: string; maxDuration?: string }>(
    windowOptions(
      traces
        .command('search')
        .description('traces matching a TraceQL spanset (all traces in the window without one)')
        .argument('[traceql]', 'TraceQL, such as { resource.service.name = "shop" }'),
    )
      .option('--tags <logfmt>', 'legacy tag filter, such as service.name=shop')
      .option('--limit <n>', 'maximum traces')
      .option('--spss <n>', 'maximum spans per span set')
      .option('--min-duration <duration>', 'only traces at least this long, such as 100ms')
      .option('--max-duration <duration>', 'only traces at most this long'),
    'traces search',
    ([q], o) => ({
      path: `${BASE}/search`,
      query: { q, tags: o.tags, limit: o.limit, spss: o.spss, start: o.start, end: o.end, minDuration: o.minDuration, maxDuration: o.maxDuration },
    }),
  );

  queryVerb<Window & { scope?: string; q?: string; limit?: string; v2?: boolean }>(
    windowOptions(traces.command('tags').description('attribute names seen in the window'))
      .option('--scope <scope>', 'resource, span or intrinsic (default: all)')
      .option('--q <traceql>', 'only names on spans matching this TraceQL, such as { resource.service.name = "shop" }')
      .option('--limit <n>', 'most names per scope (default and at most 1000)')
      .option('--v2', 'names grouped by scope (/api/v2/search/tags)'),
    'traces tags',
    (_args, o) => ({ path: o.v2 ? `${BASE}/v2/search/tags` : `${BASE}/search/tags`, query: { scope: o.scope, q: o.q, limit: o.limit, start: o.start, end: o.end } }),
  );

  queryVerb<Window & { v2?: boolean; q?: string; limit?: string }>(
    windowOptions(traces.command('tag-values').description('values of one attribute seen in the window').argument('<tag>', 'attribute, such as service.name or span.http.route'))
      .option('--q <traceql>', 'only values on spans matching this TraceQL')
      .option('--limit <n>', 'most values (default and at most 1000)')
      .option('--v2', 'typed values (/api/v2/search/tag/{tag}/values)'),
    'traces tag-values',
    ([tag], o) => ({ path: `${BASE}/${o.v2 ? 'v2/' : ''}search/tag/${seg(tag!)}/values`, query: { q: o.q, limit: o.limit, start: o.start, end: o.end } }),
  );
}
