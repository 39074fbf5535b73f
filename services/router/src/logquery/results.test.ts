import { describe, expect, it } from 'vitest';
import { attributeText, structuredMetadata, toStreams } from './results.ts';

const row = (ts: bigint, line: string, service: string, level: string, extra: Record<string, unknown> = {}) => ({ ts, line, service_name: service, level, ...extra });

describe('toStreams', () => {
  const rows = [
    row(3n, 'c', 'web', 'INFO'),
    row(2n, 'b', 'api', ''),
    row(1n, 'a', 'web', 'INFO'),
  ];

  it('groups by (service_name, level), keeps row order inside a stream, leaves empty labels out', () => {
    expect(toStreams(rows, false)).toEqual([
      { stream: { service_name: 'api' }, values: [['2', 'b']] },
      { stream: { service_name: 'web', level: 'INFO' }, values: [['3', 'c'], ['1', 'a']] },
    ]);
  });

  it('uncategorized: the metadata joins the stream labels, one stream per label set; attributes named like a stream label alias stay out', () => {
    const withMeta = [
      row(4n, 'd', 'web', 'INFO', { trace_id: 't1', log_attr_str: new Map([['user', 'ann']]) }),
      row(3n, 'c', 'web', 'INFO', { log_attr_str: new Map([['user', 'bob']]), resource_attr_str: new Map([['level', 'shadowed'], ['service.name', 'web']]) }),
      row(2n, 'b', 'web', 'INFO', { log_attr_str: new Map([['user', 'ann']]), trace_id: 't1' }),
      row(1n, 'a', 'web', 'INFO'),
      row(0n, 'z', 'web', '', { resource_attr_str: new Map([['severity', 'attr']]) }),
    ];
    const streams = toStreams(withMeta, false);
    expect(streams).toEqual([
      { stream: { service_name: 'web' }, values: [['0', 'z']] },
      { stream: { level: 'INFO', service_name: 'web' }, values: [['1', 'a']] },
      { stream: { level: 'INFO', service_name: 'web', trace_id: 't1', user: 'ann' }, values: [['4', 'd'], ['2', 'b']] },
      { stream: { level: 'INFO', service_name: 'web', user: 'bob' }, values: [['3', 'c']] },
    ]);
    expect(Object.keys(streams[2]!.stream)).toEqual(['level', 'service_name', 'trace_id', 'user']);
  });

  it('categorized: a third element per entry, {} when there is no metadata', () => {
    const withMeta = [row(1n, 'a', 'web', 'INFO', { trace_id: 'abc', span_id: null, log_attr_str: new Map([['k', 'v']]) }), row(2n, 'b', 'web', 'INFO')];
    expect(toStreams(withMeta, true)).toEqual([
      { stream: { service_name: 'web', level: 'INFO' }, values: [['1', 'a', { structuredMetadata: { k: 'v', trace_id: 'abc' } }], ['2', 'b', {}]] },
    ]);
  });
});

describe('structuredMetadata', () => {
  it('flattens every scope to strings; the record wins over the resource, the resource over the scope', () => {
    const toJSON = (o: Record<string, unknown>) => ({ toJSON: () => o });
    expect(
      structuredMetadata({
        trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
        span_id: '00f067aa0ba902b7',
        log_attr_str: toJSON({ shared: 'log', 'order.id': 'o-1' }),
        log_attr_int: toJSON({ n: 7n }),
        log_attr_double: toJSON({ ratio: 0.25, whole: 3 }),
        log_attr_bool: toJSON({ ok: false }),
        resource_attr_str: toJSON({ shared: 'resource', 'service.name': 'shop', only_res: 'r' }),
        resource_attr_int: toJSON({ 'host.cpus': 4n }),
        scope_attr_str: toJSON({ shared: 'scope', only_scope: 's', only_res: 'scope' }),
        scope_attr_bool: null,
      }),
    ).toEqual({
      'host.cpus': '4',
      n: '7',
      ok: 'false',
      only_res: 'r',
      only_scope: 's',
      'order.id': 'o-1',
      ratio: '0.25',
      'service.name': 'shop',
      shared: 'log',
      span_id: '00f067aa0ba902b7',
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
      whole: '3.0',
    });
  });

  it.each<[unknown, string]>([
    ['x', 'x'],
    [9_007_199_254_740_993n, '9007199254740993'],
    [19.99, '19.99'],
    [2, '2.0'],
    [true, 'true'],
  ])('attributeText(%s) = %s (what DuckDB CAST … AS VARCHAR prints)', (v, want) => {
    expect(attributeText(v)).toBe(want);
  });
});
