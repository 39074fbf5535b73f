import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { lowerLogQuery } from '../logql/lower.ts';
import { parseLogQL } from '../logql/parse.ts';
import type { LogSelect } from '../ir/logs.ts';
import { planLabelValues, planLogSelect, planSeries } from './logs.ts';
import { LOGS, openLogsDb, type LogsDb } from './test-db.ts';

/**
 * The translator's security suite (STYLE habit 5): whatever a query carries (quotes, backslashes,
 * comments, UNION, subqueries, table functions, placeholders, LIKE wildcards, regex
 * metacharacters, NUL) never reaches the SQL text. The printed SQL for a hostile value is the same
 * text as for a harmless one; the value travels only as a parameter and matches literally.
 */
const HOSTILE = [
  "'); DROP TABLE logs; --",
  "x' OR '1'='1",
  '" OR 1=1 --',
  "\\' OR 1=1 /*",
  '*/ UNION SELECT * FROM read_parquet(\'/etc/passwd\') --',
  "') UNION ALL SELECT * FROM other.default.logs --",
  '(SELECT current_setting(\'memory_limit\'))',
  'duckdb_settings()',
  'information_schema.tables',
  '$1 ? :name',
  'a%_b',
  '.*+?^${}()|[]\\',
  'line\nbreak\ttab',
  'ünïcödé \u2028 😀',
];

/** A LogQL string literal for any text (Go escapes are a superset of what JSON.stringify emits). */
const str = (s: string) => JSON.stringify(s);
/** An RE2 pattern matching `s` literally. */
const reLiteral = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const TEMPLATES: Array<[string, (v: string) => string]> = [
  ['stream label value', (v) => `{service_name=${str(v)}}`],
  ['attribute value', (v) => `{service_name="svc", user=${str(v)}}`],
  ['negative attribute value', (v) => `{service_name="svc", user!=${str(v)}}`],
  ['attribute regex', (v) => `{service_name="svc", user=~${str(reLiteral(v))}}`],
  ['line filter', (v) => `{service_name="svc"} |= ${str(v)}`],
  ['line filter chain with or', (v) => `{service_name="svc"} != ${str(v)} or ${str(v + 'x')}`],
  ['line regex', (v) => `{service_name="svc"} |~ ${str(reLiteral(v))}`],
  ['label filter after a parser', (v) => `{service_name="svc"} | json | user=${str(v)} or level!=${str(v)}`],
];

const range = { startNs: 0n, endNs: 10_000n };
const plan = (q: string) => planLogSelect(lowerLogQuery(parseLogQL(q), q, { range, direction: 'forward', limit: 100 }), LOGS, { metadata: true });

let db: LogsDb;
beforeAll(async () => {
  db = await openLogsDb([
    { t: 1, service: 'svc', severity: 'INFO', body: 'harmless', log: { str: { user: 'harmless' } } },
    ...HOSTILE.map((v, i) => ({ t: 10 + i, service: 'svc', severity: 'INFO', body: v, log: { str: { user: v } } })),
  ]);
});
afterAll(() => db.close());

describe('hostile values never reach the SQL text', () => {
  const cases = TEMPLATES.flatMap(([where, make]) => HOSTILE.map((v) => [where, v, make] as const));

  it.each(cases)('%s: %j', async (where, value, make) => {
    const benign = plan(make('harmless'));
    const hostile = plan(make(value));
    expect(hostile.sql).toBe(benign.sql);
    expect(hostile.params.length).toBe(benign.params.length);
    expect(hostile.params).toContain(where.includes('regex') ? reLiteral(value) : value);
    expect(hostile.sql).toMatch(/FROM "logs"\n/);
    expect(hostile.sql).not.toMatch(/;|--|\/\*|UNION|read_parquet|information_schema|duckdb_/i);

    // And on DuckDB it runs, matches literally and leaves the table alone.
    const rows = await db.run(hostile);
    const lines = rows.map((r) => r.line);
    if (where === 'stream label value') expect(lines).toEqual([]);
    if (where === 'attribute value' || where === 'attribute regex' || where === 'line filter' || where === 'line regex') expect(lines).toEqual([value]);
    if (where === 'negative attribute value') expect(lines).not.toContain(value);
    expect(await db.rowCount()).toBe(HOSTILE.length + 1);
  });

  it('label names are parameters too (map keys), whatever they spell', async () => {
    const a = planLabelValues({ kind: 'label_values', table: 'logs', range, label: 'user', streams: [] }, LOGS);
    const b = planLabelValues({ kind: 'label_values', table: 'logs', range, label: "x'] OR 1=1; --", streams: [] }, LOGS);
    expect(b.sql).toBe(a.sql);
    expect(b.params[0]).toBe("x'] OR 1=1; --");
    expect(await db.run(b)).toEqual([]);
  });

  it('series alternatives are ANDs inside one OR: an alternative cannot widen the time range', () => {
    const p = planSeries({ kind: 'series', table: 'logs', range, selectors: [[{ label: 'a', op: '=', value: 'x' }], [{ label: 'b', op: '=', value: 'y' }]] }, LOGS);
    expect(p.sql).toMatch(/WHERE "time_unix_nano" >= CAST\(\$1 AS BIGINT\)\n {2}AND "time_unix_nano" < CAST\(\$2 AS BIGINT\)\n {2}AND \(\(.*\) OR \(.*\)\)\n/);
  });

  it('an OR in a label filter stays inside its parentheses', () => {
    const p = plan('{service_name="svc"} | user="a" or user="b"');
    expect(p.sql).toMatch(/\n {2}AND \(\(coalesce\(.*\) = \$\d+ OR coalesce\(.*\) = \$\d+\)\)\n/);
  });

  it('NUL bytes are refused before planning', () => {
    expect(() => plan('{service_name="a\\x00b"}')).toThrow(/NUL/);
    expect(() => plan('{service_name="svc"} |= "a\\u0000"')).toThrow(/NUL/);
  });

  it('the printer names only the caller-relative logs view', () => {
    const ir = lowerLogQuery(parseLogQL('{a="b"}'), '{a="b"}', { range, direction: 'forward', limit: 1 });
    expect(() => planLogSelect({ ...ir, table: 'other.default.logs' } as unknown as LogSelect, LOGS, { metadata: false })).toThrow(FloeError);
    expect(() => planLogSelect({ ...ir, table: 'traces' } as unknown as LogSelect, LOGS, { metadata: false })).toThrow(/log plan for table "traces"/);
  });

  it('numbers are parameters and must be finite', () => {
    const p = plan('{service_name="svc"} | x > 1e308');
    expect(p.params).toContain(1e308);
    expect(() => plan('{service_name="svc"} | x > 1e999')).toThrow(/invalid number/);
  });
});
