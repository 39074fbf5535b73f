import { describe, expect, it } from 'vitest';
import { formatLogQL } from './format.ts';
import { parseLogQL } from './parse.ts';

/** The tree without source spans (which move when the text is reformatted). */
function shape(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(shape);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'span').map(([k, x]) => [k, shape(x)]));
  return v;
}

const CORPUS = [
  '{service_name="checkout", level!="debug", env=~"prod|stage", pod!~"canary-.*"}',
  '{k8s.pod.name="web-1"} | http.status_code >= 400',
  '{app="a"} |= "x" != `y\\z` |~ "(?i)err" !~ "ok" |= "p" or "q"',
  '{app="a"} |> "<_> error <_>" !> "GET <_>"',
  '{app="a"} | json | a > 1 and b="c", c=~"d" or e <= -2.5',
  '{app="a"} | json | (a="1" or b="2") and c="3"',
  '{app="a"} | logfmt | duration > 1m30s and size <= 20KB',
  '{app="a"} | logfmt --strict a, b="c.d" | line_format "{{.a}}" | label_format x=y, z="{{.a}}" | decolorize | drop __error__, u="v" | keep a | regexp `(?P<n>\\d+)` | pattern "<_> <x>" | unpack',
  '{app="a"} |= "tab\\there \\"quoted\\" \\u00e9"',
  '{app="a"} | json first="items[0]", name',
  'count_over_time({a="b"} |= "x" [5m] offset 1h)',
  'sum by (level, k8s.ns) (count_over_time({a="b"} |= "x" [5m] offset 1h))',
  'sum without (pod) (rate({a="b"}[90s]))',
  'quantile_over_time(0.99, {a="b"} | json | unwrap duration(d) | __error__="" [1m]) by (x)',
  'avg_over_time({a="b"} | logfmt | unwrap bytes(size) [1h30m])',
  'sum_over_time({a="b"} | unwrap latency [2d])',
  'topk(5, sum by (pod) (rate({a="b"}[1m])))',
  'bottomk by (ns) (3, count_over_time({a="b"}[1m]))',
  'sort_desc(sum by (x) (bytes_rate({a="b"}[1m])))',
  'sum(rate({a="b"}[1m])) / on (x) group_left (y) sum(rate({a="c"}[1m]))',
  'sum(rate({a="b"}[1m])) > bool 10',
  'sum(rate({a="b"}[1m])) * 100 / sum(rate({a="c"}[1m]))',
  '(sum(rate({a="b"}[1m])) + sum(rate({a="c"}[1m]))) * 2',
  '2 ^ 3 ^ 2',
  '(2 ^ 3) ^ 2',
  '10 - (4 - 3)',
  'sum(rate({a="b"}[1m])) or vector(0)',
  'sum(rate({a="b"}[1m])) and ignoring (pod) sum(rate({a="c"}[1m])) unless sum(rate({a="d"}[1m]))',
  'label_replace(sum by (pod) (rate({a="b"}[1m])), "p", "$1", "pod", "(.*)-\\\\d+")',
  'absent_over_time({a="b"}[5m])',
  'vector(1) + vector(1)',
  '1 + 1',
];

describe('formatLogQL', () => {
  it.each(CORPUS)('%s: the formatted text parses to the same tree, and formats to itself', (query) => {
    const formatted = formatLogQL(parseLogQL(query));
    expect(shape(parseLogQL(formatted))).toEqual(shape(parseLogQL(query)));
    expect(formatLogQL(parseLogQL(formatted))).toBe(formatted);
  });

  it('one line, single spaces, grouping before the expression, durations in their largest units', () => {
    expect(formatLogQL(parseLogQL('sum(\n  count_over_time({a="b"}|="x"[120s])\n) by (level)'))).toBe('sum by (level) (count_over_time({a="b"} |= "x" [2m]))');
    expect(formatLogQL(parseLogQL('{a="b"} |= `raw\\path`'))).toBe('{a="b"} |= "raw\\\\path"');
    expect(formatLogQL(parseLogQL('(1 + 2) * 3'))).toBe('(1 + 2) * 3');
    expect(formatLogQL(parseLogQL('1 + (2 * 3)'))).toBe('1 + 2 * 3');
  });
});
