import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectedFieldsOf, planDetectedFieldValues, planDetectedFields, planDetectedLabels, planIndexStats, logFieldType } from './log-discovery.ts';
import type { LabelMatch } from '../ir/logs.ts';
import { LOGS, openLogsDb, type LogRow, type LogsDb } from './test-db.ts';

/**
 * The discovery plans (index/stats, detected_fields, detected_field values, detected_labels) run
 * on DuckDB over a `logs` table of the real schema, checked against hand-counted answers.
 */
const H = 3_600_000_000_000;
const ROWS: LogRow[] = [
  { t: 1000, service: 'checkout', severity: 'INFO', body: 'abcd', traceId: '0af7651916cd43dd8448eb211c80319c', log: { str: { user: 'ann', code: '200', flag: 'true', mixed: '1' }, int: { n: 1 } }, resource: { str: { env: 'prod', 'service.name': 'checkout' } } },
  { t: 2000, service: 'checkout', severity: 'INFO', body: 'ab', log: { str: { user: 'bob', code: '404', flag: 'false', mixed: '2.5' }, int: { n: 2 }, double: { ratio: 0.5 } }, resource: { str: { env: 'prod' } } },
  { t: H + 10, service: 'checkout', severity: 'ERROR', body: "it's", log: { str: { user: 'ann', mixed: 'x' }, bool: { retry: true } }, resource: { str: { env: 'stage' } } },
  { t: 3000, service: 'web', severity: '', body: 'w', log: { str: { user: "o'neil" } } },
];

let db: LogsDb;
beforeAll(async () => {
  db = await openLogsDb(ROWS);
});
afterAll(() => db.close());

const range = { startNs: 0n, endNs: 2n * BigInt(H) };
const checkout: LabelMatch[] = [{ label: 'service_name', op: '=', value: 'checkout' }];

describe('index/stats', () => {
  it('counts streams, stream-hours, entries and line bytes', async () => {
    const rows = await db.run(planIndexStats({ kind: 'index_stats', table: 'logs', range, streams: checkout }, LOGS));
    expect(rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)])))).toEqual([{ streams: 2, chunks: 2, entries: 3, bytes: 10 }]);
    const none = await db.run(planIndexStats({ kind: 'index_stats', table: 'logs', range, streams: [{ label: 'service_name', op: '=', value: "x' OR '1'='1" }] }, LOGS));
    expect(none.map((r) => Object.values(r).map(Number))).toEqual([[0, 0, 0, 0]]);
  });
});

describe('detected_fields', () => {
  const fields = async (sampleLimit = 100, filters: Parameters<typeof planDetectedFields>[0]['filters'] = [], limit = 100) => {
    const rows = await db.run(planDetectedFields({ kind: 'detected_fields', table: 'logs', range, streams: checkout, filters, sampleLimit }, LOGS));
    return detectedFieldsOf(rows, limit).map((f) => {
      expect(f.parsers).toBeNull();
      return [f.label, f.type, f.cardinality];
    });
  };

  it('infers each record attribute type (string values read as numbers or booleans) with its distinct count', async () => {
    expect(await fields()).toEqual([
      ['code', 'int', 2],
      ['flag', 'boolean', 2],
      ['mixed', 'string', 3],
      ['n', 'int', 2],
      ['ratio', 'float', 1],
      ['retry', 'boolean', 1],
      ['trace_id', 'string', 1],
      ['user', 'string', 2],
    ]);
  });

  it('returns the first `limit` fields by name', async () => {
    expect(await fields(100, [], 2)).toEqual([
      ['code', 'int', 2],
      ['flag', 'boolean', 2],
    ]);
  });

  it('samples only the newest lines, after the filters', async () => {
    expect(await fields(1)).toEqual([
      ['mixed', 'string', 1],
      ['retry', 'boolean', 1],
      ['user', 'string', 1],
    ]);
    expect(await fields(100, [{ kind: 'line', line: { op: 'contains', values: ['abcd'] } }])).toEqual([
      ['code', 'int', 1],
      ['flag', 'boolean', 1],
      ['mixed', 'int', 1],
      ['n', 'int', 1],
      ['trace_id', 'string', 1],
      ['user', 'string', 1],
    ]);
  });

  it('a key seen as int and float is float; anything else mixed is string', () => {
    const r = (kind: string, f: Partial<{ all_int: boolean; all_float: boolean; all_bool: boolean }> = {}) => ({ kind, all_int: false, all_float: false, all_bool: false, ...f });
    expect(logFieldType([r('int'), r('double')])).toBe('float');
    expect(logFieldType([r('int'), r('str', { all_int: true, all_float: true })])).toBe('int');
    expect(logFieldType([r('bool'), r('int')])).toBe('string');
  });

  it('field values: distinct, non-empty, newest lines first, capped', async () => {
    const values = async (field: string, limit = 10, streams = checkout) =>
      (await db.run(planDetectedFieldValues({ kind: 'detected_field_values', table: 'logs', range, streams, filters: [], field, sampleLimit: 100, limit }, LOGS))).map((r) => r.value);
    expect(await values('user')).toEqual(['ann', 'bob']);
    expect(await values('user', 1)).toEqual(['ann']);
    expect(await values('user', 10, [{ label: 'service_name', op: '=~', value: '.+' }])).toEqual(['ann', 'bob', "o'neil"]);
    expect(await values('n')).toEqual(['1', '2']);
    expect(await values('nope')).toEqual([]);
  });
});

describe('detected_labels', () => {
  it('service_name, level and resource keys with their distinct counts', async () => {
    const rows = await db.run(planDetectedLabels({ kind: 'detected_labels', table: 'logs', range, streams: [{ label: 'service_name', op: '=~', value: '.+' }] }, LOGS));
    expect(rows.map((r) => [r.name, Number(r.cardinality)])).toEqual([
      ['env', 2],
      ['level', 2],
      ['service_name', 2],
    ]);
    expect(await db.rowCount()).toBe(ROWS.length);
  });
});
