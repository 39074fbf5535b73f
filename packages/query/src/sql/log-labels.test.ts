import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lowerLogQuery } from '../logql/lower.ts';
import { parseLogQL } from '../logql/parse.ts';
import { regexShortcut } from './log-labels.ts';
import { planLogSelect } from './logs.ts';
import { LOGS, openLogsDb, type LogsDb } from './test-db.ts';

/**
 * Regex matchers that print as cheaper SQL (regexShortcut) must select exactly the rows
 * regexp_full_match selects: each is run both ways over values chosen to sit on the edges
 * (empty, newlines, multi-byte text); other regexes keep regexp_full_match.
 */
const VALUES = ['', 'svc', 'svc-1', 'svc-12', 'svc\nx', 'svc-1\n', 'web', 'a|b', 'a', 'b', 'ab', 'ünï', 'ünïcode', '.', 'x.y', '\n'];

let db: LogsDb;
beforeAll(async () => {
  db = await openLogsDb(VALUES.map((v, i) => ({ t: i + 1, service: 'svc-main', severity: 'INFO', body: `row ${i}`, log: { str: { k: v } } })));
});
afterAll(() => db.close());

const rowsOf = async (q: string) => {
  const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range: { startNs: 0n, endNs: 1000n }, direction: 'forward', limit: 1000 }), LOGS, { metadata: false });
  return { sql: plan.sql, lines: (await db.run(plan)).map((r) => String(r.line)) };
};
/** What RE2 full match says, computed by DuckDB itself. */
const truth = async (re: string, negate: boolean) => {
  const plan = { sql: `SELECT body AS line FROM logs WHERE ${negate ? 'NOT ' : ''}regexp_full_match(coalesce(log_attr_str['k'], ''), $1) ORDER BY time_unix_nano`, params: [re] };
  return (await db.run(plan)).map((r) => String(r.line));
};

describe('regex shortcuts', () => {
  it('recognises only the two match-everything spellings', () => {
    expect(regexShortcut('.+')).toEqual({ kind: 'any_line', nonEmpty: true });
    expect(regexShortcut('.*')).toEqual({ kind: 'any_line', nonEmpty: false });
    for (const re of ['(?s).*', '.*.*', 'svc.*', 'web|svc-1', '.+?', '(.+)']) expect(regexShortcut(re)).toBeUndefined();
  });

  it.each(['.+', '.*', 'svc.*', 'svc.+', 'svc-1.*', 'ünï.+', 'web|svc-1', 'a|', 'a|b', 'svc', '', 'x.y', 'svc-[0-9]+', '(?s).*'])('%s selects what regexp_full_match selects', async (re) => {
    for (const [op, negate] of [['=~', false], ['!~', true]] as const) {
      const q = `{service_name="svc-main", k${op}${JSON.stringify(re)}}`;
      const got = await rowsOf(q);
      expect({ q, lines: got.lines }).toEqual({ q, lines: await truth(re, negate) });
      if (regexShortcut(re)) expect(got.sql).not.toContain('regexp_full_match');
    }
  });
});

/**
 * On a column the shortcuts (and `!= ""`) are printed on the bare column, NULL standing for the
 * absent label: each must still select exactly what the coalesced full match selects, NULL rows
 * included.
 */
describe('regex shortcuts and empty-value matchers on a column', () => {
  let cdb: LogsDb;
  beforeAll(async () => {
    cdb = await openLogsDb([...VALUES, 'null'].map((v, i) => ({ t: i + 1, service: v, severity: 'INFO', body: `row ${i}` })));
    await cdb.run({ sql: `UPDATE logs SET service_name = NULL WHERE body = $1`, params: [`row ${VALUES.length}`] });
  });
  afterAll(() => cdb.close());

  const columnRows = async (q: string) => {
    const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range: { startNs: 0n, endNs: 1000n }, direction: 'forward', limit: 1000 }), LOGS, { metadata: false });
    return { sql: plan.sql, lines: (await cdb.run(plan)).map((r) => String(r.line)) };
  };
  const columnTruth = async (cond: string, value: string) =>
    (await cdb.run({ sql: `SELECT body AS line FROM logs WHERE ${cond} ORDER BY time_unix_nano`, params: [value] })).map((r) => String(r.line));

  it.each(['.+', '.*'])('service_name =~ / !~ %j', async (re) => {
    for (const [op, negate] of [['=~', false], ['!~', true]] as const) {
      const q = `{level="INFO", service_name${op}${JSON.stringify(re)}}`;
      const got = await columnRows(q);
      expect({ q, lines: got.lines }).toEqual({ q, lines: await columnTruth(`${negate ? 'NOT ' : ''}regexp_full_match(coalesce(service_name, ''), $1)`, re) });
      expect(got.sql).not.toContain('regexp_full_match');
      expect(got.sql).not.toContain('coalesce("service_name"');
    }
  });

  it('service_name != "" and = ""', async () => {
    for (const op of ['!=', '='] as const) {
      const q = `{level="INFO", service_name${op}""}`;
      expect({ q, lines: (await columnRows(q)).lines }).toEqual({ q, lines: await columnTruth(`coalesce(service_name, '') ${op === '=' ? '=' : '<>'} $1`, '') });
    }
  });
});
