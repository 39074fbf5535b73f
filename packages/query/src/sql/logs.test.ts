import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lowerLogQuery, lowerStreamSelector } from '../logql/lower.ts';
import { parseLogQL } from '../logql/parse.ts';
import type { Direction } from '../ir/logs.ts';
import { planLabelNames, planLabelValues, planLogSelect, planSeries } from './logs.ts';
import { LOGS, openLogsDb, type LogRow, type LogsDb } from './test-db.ts';

/**
 * The printed plans, run on DuckDB over a `logs` table of the real schema: label resolution
 * (spec 1 "Log label resolution"), matcher and filter semantics, direction and limit, and the
 * label browser queries, checked row by row against hand-written expectations.
 */
const ROWS: LogRow[] = [
  {
    t: 1000, service: 'checkout', severity: 'INFO', body: 'GET /cart 200', traceId: '0af7651916cd43dd8448eb211c80319c',
    log: { str: { 'http.route': '/cart', user: 'ann' }, int: { 'http.status_code': 200 } },
    resource: { str: { 'service.name': 'checkout', 'k8s.pod.name': 'pod-1', env: 'prod' } },
  },
  {
    t: 2000, service: 'checkout', severity: 'ERROR', body: 'payment failed: card "declined"',
    log: { str: { user: 'bob' }, int: { 'http.status_code': 502 }, double: { duration: 1.5 } },
    resource: { str: { 'service.name': 'checkout', 'k8s.pod.name': 'pod-2', env: 'prod' }, int: { 'host.cpus': 4 } },
    scope: { str: { 'scope.kind': 'lib' } },
  },
  {
    t: 3000, service: 'billing', severity: '', body: "it's 100% done_now \\ back",
    log: { bool: { retry: true } },
    resource: { str: { 'service.name': 'billing', user: 'res-user', env: 'stage' } },
  },
  {
    t: 4000, service: 'billing', severity: 'WARN', body: "'); DROP TABLE logs; --",
    log: { str: { 'k8s.pod.name': 'log-pod' } },
    resource: { str: { 'k8s.pod.name': 'pod-3', env: 'prod' } },
  },
  { t: 5000, service: 'web', severity: 'debug', body: 'a.b*c [x] (y)', log: { str: { 'http.status_code': 'abc' }, double: { ratio: 0.25 } } },
  { t: 6000, service: 'web', severity: 'INFO', body: 'GET /health 200', log: { int: { 'http.status_code': 404 } } },
];

let db: LogsDb;
beforeAll(async () => {
  db = await openLogsDb(ROWS);
});
afterAll(() => db.close());

const range = { startNs: 0n, endNs: 1_000_000n };

async function select(q: string, direction: Direction = 'backward', limit = 100, metadata = false): Promise<number[]> {
  const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range, direction, limit }), LOGS, { metadata });
  const rows = await db.run(plan);
  return rows.map((r) => Number(r.ts) / 1000);
}

describe('log selection on DuckDB', () => {
  it.each<[string, number[]]>([
    // Column labels and their aliases (rule 1).
    ['{service_name="checkout"}', [2, 1]],
    ['{service="billing"}', [4, 3]],
    ['{job="billing"}', [4, 3]],
    ['{service.name="billing"}', [4, 3]],
    ['{level="ERROR"}', [2]],
    ['{severity="INFO"}', [6, 1]],
    ['{detected_level="debug"}', [5]],
    // detected_level also matches the level `by (detected_level)` reports for the row.
    ['{detected_level="INFO"}', [6, 1]],
    ['{detected_level="info"}', [6, 1]],
    ['{service_name=~".+", detected_level="unknown"}', [3]],
    ['{service_name=~".+", detected_level=""}', [3]],
    ['{service_name=~".+", detected_level!="info"}', [5, 4, 3, 2]],
    ['{service_name=~".+", detected_level=~"warn|ERROR"}', [4, 2]],
    ['{service_name=~".+", detected_level!~"warn|error|unknown"}', [6, 5, 1]],
    ['{service_name=~".+"} | detected_level="error"', [2]],
    ['{trace_id="0af7651916cd43dd8448eb211c80319c"}', [1]],
    // An empty severity is an absent label; negative matchers also match rows without the label.
    ['{service_name="billing", level=""}', [3]],
    ['{service_name=~".+", level!~"INFO|debug"}', [4, 3, 2]],
    ['{service_name=~".+", user!="ann"}', [6, 5, 4, 3, 2]],
    ['{service_name=~".+", trace_id!="0af7651916cd43dd8448eb211c80319c"}', [6, 5, 4, 3, 2]],
    // Regexes are anchored like Loki's.
    ['{service_name=~"bill"}', []],
    ['{service_name=~"bill.*|web"}', [6, 5, 4, 3]],
    ['{service_name=~".+", service_name!~"check.*"}', [6, 5, 4, 3]],
    // Attributes: the record's own value wins over the resource's (rule 2); dotted keys resolve directly (rule 4).
    ['{user="res-user"}', [3]],
    ['{env="prod"}', [4, 2, 1]],
    ['{k8s.pod.name="log-pod"}', [4]],
    ['{k8s.pod.name="pod-3"}', []],
    ['{k8s.pod.name=~"pod-.*"}', [2, 1]],
    ['{k8s_pod_name="pod-1"}', []],
    // Typed attributes compare as text: ints, doubles, bools.
    ['{service_name=~".+"} | http.status_code="502"', [2]],
    ['{service_name=~".+"} | duration="1.5"', [2]],
    ['{service_name=~".+"} | retry="true"', [3]],
    ['{service_name=~".+"} | host.cpus="4"', [2]],
    ['{service_name=~".+"} | scope.kind="lib"', [2]],
    // Ordered comparisons read numbers (a value that is not one never matches).
    ['{service_name=~".+"} | http.status_code >= 400', [6, 2]],
    ['{service_name=~".+"} | http.status_code == 200', [1]],
    ['{service_name=~".+"} | http.status_code != 200', [6, 2]],
    ['{service_name=~".+"} | duration > 1', [2]],
    ['{service_name=~".+"} | ratio < 0.5', [5]],
    ['{service_name=~".+"} | host.cpus <= 4', [2]],
    // Line filters, chained, with `or`.
    ['{service_name=~".+"} |= "GET"', [6, 1]],
    ['{service_name=~".+"} |= "GET" != "health"', [1]],
    ['{service_name=~".+"} |~ "GET /(cart|health) 200"', [6, 1]],
    ['{service_name=~".+"} |~ "cart"', [1]],
    ['{service_name=~".+"} !~ "GET"', [5, 4, 3, 2]],
    ['{service_name=~".+"} |= "cart" or "payment"', [2, 1]],
    ['{service_name=~".+"} != "cart" or "payment"', [6, 5, 4, 3]],
    ['{service_name=~".+"} |~ "(?i)get /CART"', [1]],
    // Label filters with and, or, comma and parentheses; parsers pass through.
    ['{service_name=~".+"} | json | level="ERROR" or level="WARN"', [4, 2]],
    ['{service_name=~".+"} | logfmt | env="prod", level="INFO"', [1]],
    ['{service_name=~".+"} | env="prod" and (level="INFO" or level="WARN")', [4, 1]],
    ['{service_name=~".+"} | line_format "{{.x}}" | drop a | __error__=""', [6, 5, 4, 3, 2, 1]],
    // Text that means something to SQL, LIKE or regexes matches literally.
    [`{service_name=~".+"} |= "'); DROP TABLE logs; --"`, [4]],
    ['{service_name=~".+"} |= "100%"', [3]],
    ['{service_name=~".+"} |= "%"', [3]],
    ['{service_name=~".+"} |= "_"', [3]],
    ['{service_name=~".+"} |= "\\\\"', [3]],
    ['{service_name=~".+"} |= "\\""', [2]],
    ['{service_name=~".+"} |= "a.b*c [x] (y)"', [5]],
    ['{service_name=~".+"} |= "a_b"', []],
    ['{service_name=~".+"} |~ "a\\\\.b\\\\*c"', [5]],
    ['{service_name="checkout\\" OR 1=1 --"}', []],
    ["{service_name=\"x' OR '1'='1\"}", []],
    ['{service_name=~".*\'.*"}', []],
  ])('%s', async (q, want) => {
    expect(await select(q)).toEqual(want);
    expect(await db.rowCount()).toBe(ROWS.length);
  });

  it('direction and limit: the newest or the oldest lines over all streams', async () => {
    expect(await select('{service_name=~".+"}', 'backward', 2)).toEqual([6, 5]);
    expect(await select('{service_name=~".+"}', 'forward', 2)).toEqual([1, 2]);
    expect(await select('{service_name=~".+"}', 'forward', 100)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('the time range is half-open [start, end)', async () => {
    const q = '{service_name=~".+"}';
    const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range: { startNs: 2000n, endNs: 4000n }, direction: 'forward', limit: 10 }), LOGS, { metadata: false });
    expect((await db.run(plan)).map((r) => Number(r.ts))).toEqual([2000, 3000]);
    expect(plan.hints).toEqual({ start_ns: '2000', end_ns: '3999', file_order: 'oldest_first' });
  });

  it('with metadata, the row carries trace and span ids and the attributes flattened to text', async () => {
    const q = '{service_name="checkout"}';
    const rows = await db.run(planLogSelect(lowerLogQuery(parseLogQL(q), q, { range, direction: 'forward', limit: 1 }), LOGS, { metadata: true }));
    expect(Object.keys(rows[0]!)).toEqual(['ts', 'line', 'service_name', 'level', 'trace_id', 'span_id', 'attributes_json']);
    expect(rows[0]).toMatchObject({ line: 'GET /cart 200', service_name: 'checkout', level: 'INFO', trace_id: '0af7651916cd43dd8448eb211c80319c', span_id: null });
    expect(JSON.parse(rows[0]!.attributes_json as string)).toEqual({ 'http.route': '/cart', user: 'ann', 'http.status_code': '200', 'service.name': 'checkout', 'k8s.pod.name': 'pod-1', env: 'prod' });
  });

  it('metadata: every type as DuckDB prints it, the record over the resource over the scope, the page in order', async () => {
    const q = '{service_name=~".+"}';
    for (const direction of ['backward', 'forward'] as const) {
      const rows = await db.run(planLogSelect(lowerLogQuery(parseLogQL(q), q, { range, direction, limit: 4 }), LOGS, { metadata: true }));
      expect(rows.map((r) => Number(r.ts))).toEqual(direction === 'forward' ? [1000, 2000, 3000, 4000] : [6000, 5000, 4000, 3000]);
      const byTs = new Map(rows.map((r) => [Number(r.ts), r.attributes_json === null ? null : JSON.parse(r.attributes_json as string)]));
      if (direction === 'forward') {
        expect(byTs.get(2000)).toEqual({ user: 'bob', 'http.status_code': '502', duration: '1.5', 'service.name': 'checkout', 'k8s.pod.name': 'pod-2', env: 'prod', 'host.cpus': '4', 'scope.kind': 'lib' });
        expect(byTs.get(3000)).toEqual({ retry: 'true', 'service.name': 'billing', user: 'res-user', env: 'stage' });
        // The record's k8s.pod.name wins over the resource's pod-3.
        expect(byTs.get(4000)).toEqual({ 'k8s.pod.name': 'log-pod', env: 'prod' });
      } else {
        expect(byTs.get(5000)).toEqual({ 'http.status_code': 'abc', ratio: '0.25' });
        expect(byTs.get(6000)).toEqual({ 'http.status_code': '404' });
      }
    }
  });
});

describe('a page with metadata: ties at the limit, fewer lines than the limit, none', () => {
  let ties: LogsDb;
  const tie = (t: number, body: string): LogRow => ({ t, service: 'web', severity: 'INFO', body, log: { str: { n: body } } });
  beforeAll(async () => {
    ties = await openLogsDb([tie(1000, 'a'), tie(2000, 'b'), tie(2000, 'c'), tie(2000, 'd'), tie(3000, 'e')]);
  });
  afterAll(() => ties.close());

  const page = async (q: string, direction: Direction, limit: number) => {
    const rows = await ties.run(planLogSelect(lowerLogQuery(parseLogQL(q), q, { range, direction, limit }), LOGS, { metadata: true }));
    for (const r of rows) expect(JSON.parse(r.attributes_json as string)).toEqual({ n: r.line });
    return rows.map((r) => [Number(r.ts), r.line as string] as const);
  };

  it('cuts among the lines of the last time the limit reaches, as a top-N does', async () => {
    const two = await page('{service_name="web"}', 'backward', 2);
    expect(two[0]).toEqual([3000, 'e']);
    expect(two[1]![0]).toBe(2000);
    expect((await page('{service_name="web"}', 'backward', 4)).map(([t]) => t)).toEqual([3000, 2000, 2000, 2000]);
    expect((await page('{service_name="web"}', 'forward', 3)).map(([t]) => t)).toEqual([1000, 2000, 2000]);
  });

  it('answers every line when fewer match than the limit, and none when none match', async () => {
    expect((await page('{service_name="web"} |= "e"', 'backward', 100))).toEqual([[3000, 'e']]);
    expect((await page('{service_name="web"}', 'forward', 100)).map(([t]) => t)).toEqual([1000, 2000, 2000, 2000, 3000]);
    expect(await page('{service_name="nope"}', 'backward', 100)).toEqual([]);
  });
});

describe('label browser queries on DuckDB', () => {
  const selector = (q: string) => lowerStreamSelector(parseLogQL(q), q);

  it('label names: stream labels and resource attribute keys, aliases left out', async () => {
    const all = await db.run(planLabelNames({ kind: 'label_names', table: 'logs', range, streams: [] }, LOGS));
    expect(all.map((r) => r.name)).toEqual(['env', 'host.cpus', 'k8s.pod.name', 'level', 'service_name', 'user']);
    const web = await db.run(planLabelNames({ kind: 'label_names', table: 'logs', range, streams: selector('{service_name="web"}') }, LOGS));
    expect(web.map((r) => r.name)).toEqual(['level', 'service_name']);
    const billing = await db.run(planLabelNames({ kind: 'label_names', table: 'logs', range: { startNs: 3000n, endNs: 3001n }, streams: [] }, LOGS));
    expect(billing.map((r) => r.name)).toEqual(['env', 'service_name', 'user']);
  });

  it.each<[string, string | undefined, string[]]>([
    ['level', undefined, ['ERROR', 'INFO', 'WARN', 'debug']],
    ['service', undefined, ['billing', 'checkout', 'web']],
    ['k8s.pod.name', undefined, ['log-pod', 'pod-1', 'pod-2']],
    ['http.status_code', undefined, ['200', '404', '502', 'abc']],
    ['user', '{service_name="checkout"}', ['ann', 'bob']],
    ['level', '{service_name="billing"}', ['WARN']],
    ['nope', undefined, []],
  ])('label values of %s (%s)', async (label, q, want) => {
    const rows = await db.run(planLabelValues({ kind: 'label_values', table: 'logs', range, label, streams: q ? selector(q) : [] }, LOGS));
    expect(rows.map((r) => r.value)).toEqual(want);
  });

  it('series: distinct (service_name, level) of the rows matching any selector', async () => {
    const rows = await db.run(planSeries({ kind: 'series', table: 'logs', range, selectors: [selector('{service_name="billing"}'), selector('{env="prod", level="INFO"}')] }, LOGS));
    expect(rows).toEqual([
      { service_name: 'billing', level: '' },
      { service_name: 'billing', level: 'WARN' },
      { service_name: 'checkout', level: 'INFO' },
    ]);
  });
});

describe('printed SQL', () => {
  it('a materialized label resolves to its column (rule 5), by the table definition the caller passes', () => {
    const table = { ...LOGS, columns: [...LOGS.columns, { name: 'label_k8s_pod_name', attributeKey: 'k8s.pod.name' }] };
    const q = '{k8s.pod.name="web-1"} | k8s_pod_name!="x"';
    const ir = lowerLogQuery(parseLogQL(q), q, { range, direction: 'backward', limit: 1 });
    const plan = planLogSelect(ir, table, { metadata: false });
    // The exact key, and its underscore spelling (Grafana's), both read the column.
    expect(plan.sql).toContain('AND "label_k8s_pod_name" = $3\n');
    expect(plan.sql).toContain('AND ("label_k8s_pod_name" IS DISTINCT FROM $4)\n');
    expect(plan.params).toEqual(['0', '1000000', 'web-1', 'x']);
    // A resolver the caller passes decides instead: here, no column for the underscore spelling.
    const own = planLogSelect(ir, { ...table, labelColumn: (l) => (l === 'k8s.pod.name' ? 'label_k8s_pod_name' : undefined) }, { metadata: false });
    expect(own.params).toEqual(['0', '1000000', 'web-1', 'k8s_pod_name', 'x']);
  });

  it('keys that sanitise to one column name each keep their own column; their shared underscore spelling reads the maps', () => {
    // As planMaterializedLabels names them: the later key got the `_2` column.
    const table = {
      ...LOGS,
      columns: [...LOGS.columns, { name: 'label_k8s_pod_name', attributeKey: 'k8s_pod.name' }, { name: 'label_k8s_pod_name_2', attributeKey: 'k8s.pod.name' }, { name: 'label_cloud_region', attributeKey: 'Cloud.Region' }],
    };
    const where = (label: string) => {
      const q = `{service_name="a"} | ${label}="v"`;
      const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range, direction: 'backward', limit: 1 }), table, { metadata: false });
      const column = /AND \("(label_[a-z0-9_]+)" = \$\d+\)/.exec(plan.sql)?.[1];
      return column ?? (plan.params.includes(label) ? 'maps' : 'neither');
    };
    expect(where('k8s.pod.name')).toBe('label_k8s_pod_name_2');
    expect(where('k8s_pod.name')).toBe('label_k8s_pod_name');
    expect(where('k8s_pod_name')).toBe('maps');
    // Keys keep their case: the column is lower-cased, the key it holds is not.
    expect(where('Cloud.Region')).toBe('label_cloud_region');
    expect(where('Cloud_Region')).toBe('label_cloud_region');
    expect(where('cloud.region')).toBe('maps');
    expect(where('cloud_region')).toBe('maps');
  });

  it('a selector with a line filter and a label filter: values only as parameters, time first', () => {
    const q = '{service_name="checkout", level!="debug"} |= "GET" | status >= 500';
    const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range: { startNs: 10n, endNs: 20n }, direction: 'backward', limit: 100 }), LOGS, { metadata: false });
    const status = (t: string) => `CAST("${t}_attr_int"[$6] AS DOUBLE), "${t}_attr_double"[$6], TRY_CAST("${t}_attr_str"[$6] AS DOUBLE)`;
    expect(plan.sql).toBe(
      [
        'SELECT "time_unix_nano" AS "ts", "body" AS "line", "service_name" AS "service_name", "severity_text" AS "level"',
        'FROM "logs"',
        'WHERE "time_unix_nano" >= CAST($1 AS BIGINT)',
        '  AND "time_unix_nano" < CAST($2 AS BIGINT)',
        '  AND "service_name" = $3',
        '  AND "severity_text" IS DISTINCT FROM $4',
        '  AND (contains("body", $5))',
        `  AND (coalesce(${status('log')}, ${status('resource')}, ${status('scope')}) >= $7)`,
        'ORDER BY "time_unix_nano" DESC',
        'LIMIT 100',
      ].join('\n'),
    );
    expect(plan.params).toEqual(['10', '20', 'checkout', 'debug', 'GET', 'status', 500]);
    expect(plan.hints).toEqual({ start_ns: '10', end_ns: '19', file_order: 'newest_first' });
  });

  it('forward direction, an attribute regex and an empty-value matcher', () => {
    const q = '{k8s.pod.name=~"web-.*", level=""}';
    const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range: { startNs: 0n, endNs: 1n }, direction: 'forward', limit: 5 }), LOGS, { metadata: false });
    expect(plan.sql).toContain('AND regexp_full_match(coalesce("log_attr_str"[$3], CAST("log_attr_int"[$3] AS VARCHAR)');
    expect(plan.sql).toContain(`CAST("scope_attr_bool"[$3] AS VARCHAR), ''), $4)`);
    expect(plan.sql).toContain(`AND coalesce("severity_text", '') = $5`);
    expect(plan.sql).toMatch(/ORDER BY "time_unix_nano" ASC\nLIMIT 5$/);
    expect(plan.params).toEqual(['0', '1', 'k8s.pod.name', 'web-.*', '']);
  });
});
