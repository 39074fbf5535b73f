import { Session } from 'node:inspector/promises';
import { ExportProfilesServiceRequestSchema, create } from '@floe/proto';
import { describe, expect, it } from 'vitest';
import { addCpuProfile } from './cpu-profile.ts';
import { addHeapProfile, heapProfileToOtlp, type V8SamplingHeapNode, type V8SamplingHeapProfile } from './heap-profile.ts';
import { OtlpProfileBuilder, type ProfilesRequestInit } from './otlp-profile.ts';

// A small allocation tree as HeapProfiler.getSamplingProfile reports it:
// (root) → main → {parse, (anonymous) → encode}, and V8's (V8 API) pseudo-frame under the root.
const frame = (functionName: string, lineNumber = -1, url = '') => ({ functionName, url, lineNumber, columnNumber: 0, scriptId: '1' });
const node = (id: number, callFrame: ReturnType<typeof frame>, selfSize: number, children: V8SamplingHeapNode[] = []): V8SamplingHeapNode => ({ id, callFrame, selfSize, children });
const HEAD = node(1, frame('(root)'), 0, [
  node(2, frame('main', 9, 'file:///app/main.js'), 1_000, [
    node(3, frame('parse', 19, 'file:///app/main.js'), 524_320 * 2 + 600_000),
    node(4, frame('', 29, 'file:///app/lib.js'), 0, [node(6, frame('encode', 39, 'file:///app/lib.js'), 700_000)]),
  ]),
  node(5, frame('(V8 API)'), 530_000),
]);
const SAMPLES: NonNullable<V8SamplingHeapProfile['samples']> = [
  { size: 524_320, nodeId: 3, ordinal: 1 },
  { size: 600_000, nodeId: 3, ordinal: 2 },
  { size: 700_000, nodeId: 6, ordinal: 3 },
  { size: 524_320, nodeId: 3, ordinal: 4 },
  { size: 530_000, nodeId: 5, ordinal: 5 },
  { size: 1_000, nodeId: 2, ordinal: 6 },
];
const INTERVAL = 512 * 1024;
const AT = 1_700_000_000_000_000_000n;
const META = { resource: { 'service.name': 'router', 'deployment.environment': 'self-monitoring' }, samplingIntervalBytes: INTERVAL, timeUnixNano: AT };

/** Every profile of a request, its stacks resolved to names (leaf first) with their values. */
function resolveAll(init: ProfilesRequestInit) {
  const req = create(ExportProfilesServiceRequestSchema, init);
  const d = req.dictionary!;
  const fnOf = (loc: (typeof d.locationTable)[number]) => d.functionTable[loc.lines[0]!.functionIndex]!;
  const fn = (loc: number) => fnOf(d.locationTable[loc]!);
  return req.resourceProfiles[0]!.scopeProfiles[0]!.profiles.map((p) => ({
    profile: p,
    type: `${d.stringTable[p.sampleType!.typeStrindex]}/${d.stringTable[p.sampleType!.unitStrindex]}`,
    period: `${d.stringTable[p.periodType!.typeStrindex]}/${d.stringTable[p.periodType!.unitStrindex]}`,
    stacks: Object.fromEntries(p.samples.map((s) => [d.stackTable[s.stackIndex]!.locationIndices.map((l) => d.stringTable[fn(l).nameStrindex]).join(' < '), s.values])),
    files: Object.fromEntries(d.locationTable.slice(1).map((l) => [d.stringTable[fnOf(l).nameStrindex], d.stringTable[fnOf(l).filenameStrindex]])),
    lines: Object.fromEntries(d.locationTable.slice(1).map((l) => [d.stringTable[fnOf(l).nameStrindex], l.lines[0]!.line])),
    req,
  }));
}

const EXPECTED = {
  'parse < main': [524_320n * 2n + 600_000n],
  'encode < (anonymous) < main': [700_000n],
  '(V8 API)': [530_000n],
  main: [1_000n],
};

describe('heapProfileToOtlp', () => {
  it.each([
    ['the samples', { head: HEAD, samples: SAMPLES }],
    ['selfSize when there are no samples', { head: HEAD }],
  ])('sums live bytes per stack from %s, leaf first, without (root)', (_how, profile) => {
    const [p] = resolveAll(heapProfileToOtlp(profile, META));
    expect(p!.stacks).toEqual(EXPECTED);
  });

  it('describes an inuse_space profile in bytes, period space/bytes of the sampling interval, taken at one moment', () => {
    const [p, ...more] = resolveAll(heapProfileToOtlp({ head: HEAD, samples: SAMPLES }, META));
    expect(more).toEqual([]);
    expect(p!.type).toBe('inuse_space/bytes');
    expect(p!.period).toBe('space/bytes');
    expect(p!.profile.period).toBe(BigInt(INTERVAL));
    expect(p!.profile.timeUnixNano).toBe(AT);
    expect(p!.profile.durationNano).toBe(0n);
    expect(p!.profile.profileId.length).toBe(16);
    // Function names and files resolved, lines 1-based; unnamed functions are (anonymous).
    expect(p!.files).toMatchObject({ main: 'file:///app/main.js', parse: 'file:///app/main.js', encode: 'file:///app/lib.js', '(anonymous)': 'file:///app/lib.js' });
    expect(p!.lines).toMatchObject({ main: 10n, parse: 20n, encode: 40n, '(V8 API)': 0n });
    const attrs = p!.req.resourceProfiles[0]!.resource!.attributes.map((a) => [a.key, a.value?.value.value]);
    expect(attrs).toEqual([['service.name', 'router'], ['deployment.environment', 'self-monitoring']]);
  });

  it('skips samples of nodes the tree lacks and gives an empty profile for an empty heap', () => {
    expect(resolveAll(heapProfileToOtlp({ head: HEAD, samples: [{ size: 10, nodeId: 99 }] }, META))[0]!.stacks).toEqual({});
    expect(resolveAll(heapProfileToOtlp({ head: node(1, frame('(root)'), 0), samples: [] }, META))[0]!.profile.samples).toEqual([]);
  });

  it('shares one dictionary with a CPU profile of the same request', () => {
    const builder = new OtlpProfileBuilder();
    const cpuNodes = [
      { id: 1, callFrame: frame('(root)'), children: [2] },
      { id: 2, callFrame: frame('main', 9, 'file:///app/main.js'), children: [3] },
      { id: 3, callFrame: frame('parse', 19, 'file:///app/main.js') },
    ];
    addCpuProfile(builder, { nodes: cpuNodes, startTime: 0, endTime: 1_000, samples: [3, 3] }, { periodNs: 1_000_000n, startUnixNano: AT });
    addHeapProfile(builder, { head: HEAD, samples: SAMPLES }, META);
    const [cpu, heap] = resolveAll(builder.request(META));
    expect(cpu!.type).toBe('cpu/nanoseconds');
    expect(cpu!.stacks).toEqual({ 'parse < main': [2_000_000n] });
    expect(heap!.type).toBe('inuse_space/bytes');
    expect(heap!.stacks).toEqual(EXPECTED);
    // The shared stack parse < main is one entry, used by both profiles.
    expect(heap!.profile.samples.find((s) => s.values[0] === EXPECTED['parse < main'][0])!.stackIndex).toBe(cpu!.profile.samples[0]!.stackIndex);
  });

  it("converts a live profile of V8's sampling heap profiler", async () => {
    const session = new Session();
    session.connect();
    try {
      await session.post('HeapProfiler.enable');
      await session.post('HeapProfiler.startSampling', { samplingInterval: 4096 });
      const kept: unknown[] = [];
      const allocateForHeapTest = () => {
        for (let i = 0; i < 20_000; i++) kept.push({ i, s: `x${i}` });
      };
      allocateForHeapTest();
      const { profile } = await session.post('HeapProfiler.getSamplingProfile');
      const [p] = resolveAll(heapProfileToOtlp(profile as unknown as V8SamplingHeapProfile, { ...META, samplingIntervalBytes: 4096 }));
      const mine = Object.entries(p!.stacks).filter(([stack]) => stack.startsWith('allocateForHeapTest'));
      expect(mine.length).toBeGreaterThan(0);
      expect(mine.reduce((sum, [, [v]]) => sum + v!, 0n)).toBeGreaterThan(0n);
      expect(kept.length).toBe(20_000);
    } finally {
      await session.post('HeapProfiler.stopSampling').catch(() => undefined);
      session.disconnect();
    }
  });
});
