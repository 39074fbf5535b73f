import { describe, expect, it } from 'vitest';
import { RequestParams } from './request-params.ts';
import { searchRequest, secondsWindow, tagField, tagsConditions } from './trace-search.ts';

const S = 1_000_000_000n;
const params = (q: string) => new RequestParams(`/api/search?${q}`);

describe('tagsConditions (Tempo’s legacy logfmt tags)', () => {
  it('reads keys, bare and quoted values, typed as Tempo compares them', () => {
    expect(tagsConditions('service.name=api  name="GET /x" http.status_code=500 ratio=0.5 ok=true note="say \\"hi\\""')).toEqual([
      { field: { kind: 'service' }, value: { type: 'string', value: 'api' } },
      { field: { kind: 'name' }, value: { type: 'string', value: 'GET /x' } },
      { field: { kind: 'attribute', scope: 'any', key: 'http.status_code' }, value: { type: 'int', value: 500n } },
      { field: { kind: 'attribute', scope: 'any', key: 'ratio' }, value: { type: 'float', value: 0.5 } },
      { field: { kind: 'attribute', scope: 'any', key: 'ok' }, value: { type: 'bool', value: true } },
      { field: { kind: 'attribute', scope: 'any', key: 'note' }, value: { type: 'string', value: 'say "hi"' } },
    ]);
    expect(tagsConditions('')).toEqual([]);
  });

  it.each(['novalue', '=x', 'a="open', 'a="x"b', 'a=x"y', 'k"ey=1'])('refuses %s as bad_data', (raw) => {
    expect(() => tagsConditions(raw)).toThrow(/invalid tags/);
  });
});

describe('tagField', () => {
  it('resolves intrinsics, the service and scoped or bare attribute names to one field', () => {
    expect(tagField('span:status')).toEqual({ field: { kind: 'status' } });
    expect(tagField('kind')).toEqual({ field: { kind: 'kind' } });
    expect(tagField('resource.service.name')).toEqual({ field: { kind: 'service' } });
    expect(tagField('service.name')).toEqual({ field: { kind: 'service' } });
    for (const t of ['span.http.method', '.http.method', 'resource.http.method', 'http.method']) expect(tagField(t)).toEqual({ field: { kind: 'attribute', scope: 'any', key: 'http.method' } });
    for (const t of ['rootServiceName', 'trace:rootService']) expect(tagField(t)).toEqual({ field: { kind: 'service' }, rootOnly: true });
    for (const t of ['rootName', 'trace:rootName']) expect(tagField(t)).toEqual({ field: { kind: 'name' }, rootOnly: true });
    for (const t of ['duration', 'event:name', 'trace:duration', '.']) expect(tagField(t)).toBeUndefined();
  });
});

describe('search parameters', () => {
  it('includes the whole end second and defaults to the hour before now', () => {
    expect(secondsWindow(params('start=100&end=200'), 0n, 3600n * S)).toEqual({ startNs: 100n * S, endNs: 201n * S });
    expect(secondsWindow(params(''), 10_000n * S, 3600n * S)).toEqual({ startNs: 6400n * S, endNs: 10_000n * S });
    expect(() => secondsWindow(params('start=1700000000000'), 0n, S)).toThrow(/too large for unix seconds/);
    expect(() => secondsWindow(params('start=200&end=200'), 0n, S)).toThrow(/end must be after start/);
  });

  it('defaults limit to 20 and spss to every span; reads Go durations', () => {
    const ir = searchRequest(params('q=%7B%7D&start=1&end=2&minDuration=1.5s&maxDuration=1m'), 0n);
    expect(ir).toMatchObject({ limit: 20, conditions: [], minDurationNs: 1_500_000_000n, maxDurationNs: 60n * S });
    expect(ir.spansPerSpanSet).toBeUndefined();
    expect(searchRequest(params('spss=0&start=1&end=2'), 0n).spansPerSpanSet).toBeUndefined();
    expect(searchRequest(params('spss=3&start=1&end=2'), 0n).spansPerSpanSet).toBe(3);
    expect(() => searchRequest(params('limit=5000&start=1&end=2'), 0n)).toThrow(/exceeds the maximum 1000/);
    expect(() => searchRequest(params('minDuration=2s&maxDuration=1s&start=1&end=2'), 0n)).toThrow(/maxDuration is less than minDuration/);
  });
});
