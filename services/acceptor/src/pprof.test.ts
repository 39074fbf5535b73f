import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { create, PprofProfileSchema, toBinary } from '@floe/proto';
import { pprofToOtlp } from './pprof.ts';
import { profilesToRows } from './profiles-to-rows.ts';

/** A small Go-style heap profile: two sample types, three functions, one inlined frame, labels. */
function heapProfile(timeNanos: bigint): Uint8Array {
  const strings = ['', 'alloc_objects', 'count', 'alloc_space', 'bytes', 'space', 'main.main', 'main.alloc', 'runtime.mallocgc', 'main.go', 'worker', 'pool', 'bytes.Grow'];
  const s = (x: string) => BigInt(strings.indexOf(x));
  return toBinary(
    PprofProfileSchema,
    create(PprofProfileSchema, {
      sampleType: [
        { type: s('alloc_objects'), unit: s('count') },
        { type: s('alloc_space'), unit: s('bytes') },
      ],
      periodType: { type: s('space'), unit: s('bytes') },
      period: 524288n,
      timeNanos,
      durationNanos: 10_000_000_000n,
      stringTable: strings,
      function: [
        { id: 1n, name: s('main.main'), systemName: s('main.main'), filename: s('main.go') },
        { id: 2n, name: s('main.alloc'), filename: s('main.go') },
        { id: 3n, name: s('runtime.mallocgc') },
        { id: 4n, name: s('bytes.Grow') },
      ],
      location: [
        { id: 10n, line: [{ functionId: 1n, line: 12n }] },
        // An inlined frame: bytes.Grow inlined into main.alloc (callee first).
        { id: 11n, line: [{ functionId: 4n, line: 40n }, { functionId: 2n, line: 30n }] },
        { id: 12n, line: [{ functionId: 3n, line: 900n }] },
      ],
      sample: [
        { locationId: [12n, 11n, 10n], value: [3n, 4096n], label: [{ key: s('worker'), str: s('pool') }] },
        { locationId: [11n, 10n], value: [0n, 100n], label: [{ key: s('worker'), num: 7n }] },
        { locationId: [10n], value: [1n, 0n] },
      ],
    }),
  );
}

const rowsOf = (series: Parameters<typeof pprofToOtlp>[0]) => {
  const { request, names } = pprofToOtlp(series, 1 << 20);
  return [...profilesToRows(request, undefined, undefined, undefined, names).byHour.values()].flatMap((b) => b.items as Array<Record<string, unknown>>);
};

describe('pprof from Pyroscope push', () => {
  const t = 1_700_000_000_000_000_000n;

  it('becomes one profile row per sample type, named by __name__, with stacks of function names leaf first', () => {
    const rows = rowsOf([{ labels: [{ name: '__name__', value: 'memory' }, { name: 'service_name', value: 'api' }, { name: 'region', value: 'eu' }, { name: '__delta__', value: 'false' }], profiles: [heapProfile(t)] }]);
    expect(rows.map((r) => [r.profile_type, r.service_name, r.time_unix_nano, r.total_value, r.period, r.duration_nano])).toEqual([
      ['memory:alloc_objects:count:space:bytes', 'api', t.toString(), 4, 524288, 10_000_000_000],
      ['memory:alloc_space:bytes:space:bytes', 'api', t.toString(), 4196, 524288, 10_000_000_000],
    ]);
    expect(rows[0]!.resource_attr_str).toEqual({ 'service.name': 'api', region: 'eu' });
    // Samples of value 0 for a type are left out of that type's profile.
    const objects = JSON.parse(String(rows[0]!.samples_json)) as Array<{ stack: number; value: number; attributes?: Record<string, unknown> }>;
    const stacks = JSON.parse(String(rows[0]!.stacktraces_json)) as string[][];
    expect(objects.map((x) => [stacks[x.stack], x.value, x.attributes])).toEqual([
      [['runtime.mallocgc', 'bytes.Grow', 'main.alloc', 'main.main'], 3, { worker: 'pool' }],
      [['main.main'], 1, undefined],
    ]);
    const space = JSON.parse(String(rows[1]!.samples_json)) as Array<{ stack: number; value: number; attributes?: Record<string, unknown> }>;
    const spaceStacks = JSON.parse(String(rows[1]!.stacktraces_json)) as string[][];
    expect(space.map((x) => [spaceStacks[x.stack], x.value, x.attributes])).toEqual([
      [['runtime.mallocgc', 'bytes.Grow', 'main.alloc', 'main.main'], 4096, { worker: 'pool' }],
      [['bytes.Grow', 'main.alloc', 'main.main'], 100, { worker: 7 }],
    ]);
  });

  it('takes gzip profiles, several per series and several series', () => {
    const rows = rowsOf([
      { labels: [{ name: '__name__', value: 'memory' }, { name: 'service_name', value: 'a' }], profiles: [gzipSync(heapProfile(t)), heapProfile(t + 1n)] },
      { labels: [{ name: 'service_name', value: 'b' }], profiles: [heapProfile(t + 2n)] },
    ]);
    expect(rows.map((r) => [r.service_name, r.profile_type])).toEqual([
      ['a', 'memory:alloc_objects:count:space:bytes'],
      ['a', 'memory:alloc_space:bytes:space:bytes'],
      ['a', 'memory:alloc_objects:count:space:bytes'],
      ['a', 'memory:alloc_space:bytes:space:bytes'],
      // Without __name__ the name is derived as for OTLP profiles.
      ['b', 'memory:alloc_objects:count:space:bytes'],
      ['b', 'memory:alloc_space:bytes:space:bytes'],
    ]);
  });

  it("a label with a long value on every sample is one attribute, found by the label's string indexes (its text was read whole per sample: minutes for a few MB)", () => {
    const samples = 20_000;
    const profile = toBinary(
      PprofProfileSchema,
      create(PprofProfileSchema, {
        sampleType: [{ type: 1n, unit: 2n }],
        stringTable: ['', 'cpu', 'nanoseconds', 'request', 'v'.repeat(4 << 20), 'main.main'],
        function: [{ id: 1n, name: 5n }],
        location: [{ id: 1n, line: [{ functionId: 1n }] }],
        sample: Array.from({ length: samples }, (_, i) => ({ locationId: [1n], value: [1n], label: [{ key: 3n, str: 4n }, { key: 3n, num: BigInt(i % 2) }] })),
      }),
    );
    const { request } = pprofToOtlp([{ labels: [], profiles: [profile] }], 8 << 20);
    expect(request.dictionary!.attributeTable.map((a) => a.value?.value.case)).toEqual(['stringValue', 'stringValue', 'intValue', 'intValue']);
    const got = request.resourceProfiles[0]!.scopeProfiles[0]!.profiles[0]!.samples;
    expect(got).toHaveLength(samples);
    expect(got.slice(0, 2).map((x) => x.attributeIndices)).toEqual([[1, 2], [1, 3]]);
  });

  it('refuses bodies that are no pprof, and references to what the profile does not define', () => {
    expect(() => pprofToOtlp([{ labels: [], profiles: [new Uint8Array([0x0a, 0xff])] }], 1 << 20)).toThrow(/series\[0\]\.samples\[0\]: the profile is not a valid pprof/);
    expect(() => pprofToOtlp([{ labels: [], profiles: [new Uint8Array([0x1f, 0x8b, 1, 2])] }], 1 << 20)).toThrow(/not valid gzip/);
    const dangling = toBinary(PprofProfileSchema, create(PprofProfileSchema, { stringTable: ['', 'cpu', 'ns'], sampleType: [{ type: 1n, unit: 2n }], sample: [{ locationId: [99n], value: [1n] }] }));
    expect(() => pprofToOtlp([{ labels: [], profiles: [dangling] }], 1 << 20)).toThrow(/names location 99/);
    const badString = toBinary(PprofProfileSchema, create(PprofProfileSchema, { stringTable: [''], sampleType: [{ type: 5n, unit: 0n }] }));
    expect(() => pprofToOtlp([{ labels: [], profiles: [badString] }], 1 << 20)).toThrow(/string index 5 is out of range/);
    const huge = gzipSync(Buffer.alloc(2 << 20));
    expect(() => pprofToOtlp([{ labels: [], profiles: [huge] }], 1 << 20)).toThrow(/the request's profiles inflate beyond 1048576 bytes/);
    // The limit holds for the request's profiles together.
    const half = gzipSync(heapProfile(t));
    const size = heapProfile(t).length;
    expect(() => pprofToOtlp([{ labels: [], profiles: [half, half, half] }], size * 2 + 1)).toThrow(/the request's profiles inflate beyond \d+ bytes/);
  });
});
