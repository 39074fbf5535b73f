import type { Command } from 'commander';
import { seg } from '@floe/client';
import { queryVerb } from './verb.ts';

/**
 * `floe profiles …`: the Pyroscope-compatible profile API under /profilequery and the trace
 * correlation route /api/profiles/trace/{id}, with exactly the verbs of spec 1 profile query
 * rule 5. Times are unix seconds or milliseconds, or relative such as now-1h.
 */

const BASE = 'profilequery';

interface Window {
  from?: string;
  until?: string;
}

const windowOptions = (cmd: Command) =>
  cmd.option('--from <time>', 'window start: unix s or ms, or now-1h (default until minus 1h)').option('--until <time>', 'window end (default now)');

export function registerProfileCommands(program: Command): void {
  const profiles = program.command('profiles').description('query profiles (the /profilequery API)');

  queryVerb<Window & { query?: string }>(
    windowOptions(profiles.command('types').description('profile types seen in the window')).option('--query <selector>', 'only profiles matching this selector'),
    'profiles types',
    (_args, o) => ({ path: `${BASE}/profile-types`, query: { query: o.query, from: o.from, until: o.until } }),
  );

  queryVerb<Window & { query?: string }>(
    windowOptions(profiles.command('labels').description('label names seen in the window')).option('--query <selector>', 'only profiles matching this selector'),
    'profiles labels',
    (_args, o) => ({ path: `${BASE}/label-names`, query: { query: o.query, from: o.from, until: o.until } }),
  );

  queryVerb<Window & { query?: string }>(
    windowOptions(profiles.command('label-values').description('values of one label seen in the window').argument('<label>', 'label name, such as service_name')).option(
      '--query <selector>',
      'only profiles matching this selector',
    ),
    'profiles label-values',
    ([label], o) => ({ path: `${BASE}/label-values`, query: { label, query: o.query, from: o.from, until: o.until } }),
  );

  queryVerb<Window & { maxNodes?: string; groupBy?: string; aggregation?: string; format?: string }>(
    windowOptions(
      profiles
        .command('render')
        .description('flamegraph (flamebearer JSON) of the matching profiles, or with --format dot a Graphviz call graph')
        .argument('<selector>', 'profile type and labels, such as process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="shop"}'),
    )
      .option('--max-nodes <n>', 'node cap of the flamegraph (--format dot: default 100)')
      .option('--group-by <label>', 'add one timeline per value of this label, in "groups"')
      .option('--aggregation <how>', 'how a timeline slot combines its profiles: sum (default) or avg')
      .option('--format <format>', 'json (default) or dot: a Graphviz DOT call graph as text'),
    'profiles render',
    ([selector], o) => ({
      path: `${BASE}/render`,
      query: { query: selector, from: o.from, until: o.until, 'max-nodes': o.maxNodes, groupBy: o.groupBy, aggregation: o.aggregation, format: o.format },
    }),
  );

  // The same selector on both sides (or --right-query on the right), each over its own window:
  // what changed between two periods; --from/--until fill in a side's window bound left out.
  queryVerb<Window & { leftFrom?: string; leftUntil?: string; rightFrom?: string; rightUntil?: string; rightQuery?: string; maxNodes?: string }>(
    profiles
      .command('diff')
      .description('differential flamegraph of one selector between two windows')
      .argument('<selector>', 'profile type and labels')
      .option('--left-from <time>', 'left (baseline) window start')
      .option('--left-until <time>', 'left window end')
      .option('--right-from <time>', 'right (comparison) window start')
      .option('--right-until <time>', 'right window end')
      .option('--from <time>', 'start of either window that names none (default its end minus 1h)')
      .option('--until <time>', 'end of either window that names none (default now)')
      .option('--right-query <selector>', 'the right side’s selector instead of <selector> (same profile type)')
      .option('--max-nodes <n>', 'node cap of the flamegraph'),
    'profiles diff',
    ([selector], o) => ({
      path: `${BASE}/render-diff`,
      query: {
        leftQuery: selector,
        leftFrom: o.leftFrom,
        leftUntil: o.leftUntil,
        rightQuery: o.rightQuery ?? selector,
        rightFrom: o.rightFrom,
        rightUntil: o.rightUntil,
        from: o.from,
        until: o.until,
        'max-nodes': o.maxNodes,
      },
    }),
  );

  queryVerb<Window & { limit?: string }>(
    windowOptions(profiles.command('by-trace').description('summaries of the profiles linked to a trace').argument('<trace_id>', 'up to 32 hex digits')).option(
      '--limit <n>',
      'maximum summaries',
    ),
    'profiles by-trace',
    ([id], o) => ({ path: `api/profiles/trace/${seg(id!)}`, query: { from: o.from, until: o.until, limit: o.limit } }),
  );
}
