import { describe, expect, it } from 'vitest';
import { structuredMetadata, toStreams } from './results.ts';

const row = (ts: bigint, line: string, service: string, level: string, extra: Record<string, unknown> = {}) => ({ ts, line, service_name: service, level, ...extra });
const attrs = (a: Record<string, string>) => ({ attributes_json: JSON.stringify(a) });

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
      row(4n, 'd', 'web', 'INFO', { trace_id: 't1', ...attrs({ user: 'ann' }) }),
      row(3n, 'c', 'web', 'INFO', attrs({ user: 'bob', level: 'shadowed', 'service.name': 'web' })),
      row(2n, 'b', 'web', 'INFO', { ...attrs({ user: 'ann' }), trace_id: 't1' }),
      row(1n, 'a', 'web', 'INFO', { attributes_json: null }),
      row(0n, 'z', 'web', '', attrs({ severity: 'attr' })),
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
    const withMeta = [row(1n, 'a', 'web', 'INFO', { trace_id: 'abc', span_id: null, ...attrs({ k: 'v' }) }), row(2n, 'b', 'web', 'INFO', attrs({}))];
    expect(toStreams(withMeta, true)).toEqual([
      { stream: { service_name: 'web', level: 'INFO' }, values: [['1', 'a', { structuredMetadata: { k: 'v', trace_id: 'abc' } }], ['2', 'b', {}]] },
    ]);
  });
});

describe('structuredMetadata', () => {
  it('is the planned attributes plus trace and span ids, keys sorted; a __proto__ key is a key like any other', () => {
    const metadata = structuredMetadata({
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
      span_id: '',
      attributes_json: '{"z":"1","__proto__":"p","a.b":"3.0"}',
    });
    expect(Object.entries(metadata)).toEqual([
      ['__proto__', 'p'],
      ['a.b', '3.0'],
      ['trace_id', '4bf92f3577b34da6a3ce929d0e0e4736'],
      ['z', '1'],
    ]);
    expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype);
    expect(structuredMetadata({ attributes_json: null, trace_id: null })).toEqual({});
  });
});
