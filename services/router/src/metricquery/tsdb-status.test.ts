import { describe, expect, it } from 'vitest';
import { tsdbStatus } from './tsdb-status.ts';

describe('tsdbStatus', () => {
  const series: Array<Record<string, string>> = [
    { __name__: 'http_requests_total', job: 'api', code: '200' },
    { __name__: 'http_requests_total', job: 'api', code: '500' },
    { __name__: 'http_requests_total', job: 'web', code: '200' },
    { __name__: 'up', job: 'api' },
    { __name__: 'up', job: 'web', zone: 'é' },
  ];

  it('counts series per metric name, values per label name, value bytes per label name and series per pair, largest first, ties by name', () => {
    expect(tsdbStatus(series, 10, { startMs: 1000, endMs: 2000 })).toEqual({
      headStats: { numSeries: 5, numLabelPairs: 7, chunkCount: 0, minTime: 1000, maxTime: 2000 },
      seriesCountByMetricName: [
        { name: 'http_requests_total', value: 3 },
        { name: 'up', value: 2 },
      ],
      labelValueCountByLabelName: [
        { name: '__name__', value: 2 },
        { name: 'code', value: 2 },
        { name: 'job', value: 2 },
        { name: 'zone', value: 1 },
      ],
      // The UTF-8 bytes of the distinct values: 19 + 2 for __name__.
      memoryInBytesByLabelName: [
        { name: '__name__', value: 21 },
        { name: 'code', value: 6 },
        { name: 'job', value: 6 },
        { name: 'zone', value: 2 },
      ],
      seriesCountByLabelValuePair: [
        { name: '__name__=http_requests_total', value: 3 },
        { name: 'job=api', value: 3 },
        { name: '__name__=up', value: 2 },
        { name: 'code=200', value: 2 },
        { name: 'job=web', value: 2 },
        { name: 'code=500', value: 1 },
        { name: 'zone=é', value: 1 },
      ],
    });
  });

  it('cuts every list at the limit; no series gives empty lists', () => {
    const limited = tsdbStatus(series, 1, { startMs: 0, endMs: 1 });
    expect([limited.seriesCountByMetricName, limited.labelValueCountByLabelName, limited.memoryInBytesByLabelName, limited.seriesCountByLabelValuePair].map((l) => l.map((s) => s.name))).toEqual([
      ['http_requests_total'],
      ['__name__'],
      ['__name__'],
      ['__name__=http_requests_total'],
    ]);
    expect(tsdbStatus([], 10, { startMs: 0, endMs: 1 })).toMatchObject({ headStats: { numSeries: 0, numLabelPairs: 0 }, seriesCountByMetricName: [], seriesCountByLabelValuePair: [] });
  });
});
