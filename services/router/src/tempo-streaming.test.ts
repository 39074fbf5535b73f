import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { TempoSearchRequestSchema, create, toBinary } from '@floe/proto';
import { grpcTimeoutMs, searchRequestOf } from './tempo-streaming.ts';

describe('grpcTimeoutMs', () => {
  it.each([
    ['10S', 10_000],
    ['250m', 250],
    ['2M', 120_000],
    ['1H', 3_600_000],
    ['5000u', 5],
  ] as const)('%s is %d ms', (header, ms) => expect(grpcTimeoutMs(header)).toBe(ms));
  it.each([undefined, '', '10', 'S', '123456789S', '1s', '-1S'])('%o is none', (header) => expect(grpcTimeoutMs(header)).toBeUndefined());
});

describe('searchRequestOf', () => {
  const framed = (message: number[]) => Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), Buffer.from(message)]);
  it('reads one framed SearchRequest', () => {
    const message = toBinary(TempoSearchRequestSchema, create(TempoSearchRequestSchema, { Query: '{}', Limit: 5 }));
    expect(searchRequestOf(framed([...message]))).toMatchObject({ Query: '{}', Limit: 5 });
  });
  it.each([
    ['a truncated varint', [0xff, 0xff, 0xff, 0xff, 0x0f]],
    ['a length past the end', [0x1a, 0x7f, 0x41]],
    ['a fixed32 field too short', [0x0d, 1, 2]],
  ])('refuses %s as bad_data, not an internal error', (_name, message) => {
    let caught: unknown;
    try {
      searchRequestOf(framed(message));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(FloeError);
    expect(caught).toMatchObject({ kind: 'bad_data', message: expect.stringContaining('not a tempopb.SearchRequest') });
  });
});
