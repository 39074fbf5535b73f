import { ExportProfilesServiceRequestSchema, create } from '@floe/proto';
import { describe, expect, it } from 'vitest';
import { cpuProfileToOtlp, type V8CpuProfile } from './cpu-profile.ts';

// A small call tree as node:inspector reports it: (root) → main → {handle, compute → hash},
// plus V8's pseudo-frames (idle) and (program) under the root.
const frame = (functionName: string, lineNumber = -1, url = '') => ({ functionName, url, lineNumber, columnNumber: 0, scriptId: '1' });
const NODES: V8CpuProfile['nodes'] = [
  { id: 1, callFrame: frame('(root)'), children: [2, 5, 7] },
  { id: 2, callFrame: frame('main', 9, 'file:///app/main.js'), children: [3, 4] },
  { id: 3, callFrame: frame('handle', 19, 'file:///app/main.js') },
  { id: 4, callFrame: frame('', 29, 'file:///app/lib.js'), children: [6] },
  { id: 6, callFrame: frame('hash', 39, 'file:///app/lib.js') },
  { id: 5, callFrame: frame('(idle)') },
  { id: 7, callFrame: frame('(program)') },
];
const PERIOD = 10_000_000n;
const META = { resource: { 'service.name': 'router', 'deployment.environment': 'self-monitoring' }, periodNs: PERIOD, startUnixNano: 1_700_000_000_000_000_000n };

/** The profile's samples resolved through the dictionary: stacks as names (leaf first) and values. */
function resolve(profile: V8CpuProfile) {
  const req = create(ExportProfilesServiceRequestSchema, cpuProfileToOtlp(profile, META));
  const d = req.dictionary!;
  const name = (loc: number) => d.functionTable[d.locationTable[loc]!.lines[0]!.functionIndex]!;
  const p = req.resourceProfiles[0]!.scopeProfiles[0]!.profiles[0]!;
  return {
    req,
    profile: p,
    strings: d.stringTable,
    stacks: Object.fromEntries(
      p.samples.map((s) => [d.stackTable[s.stackIndex]!.locationIndices.map((l) => d.stringTable[name(l).nameStrindex]).join(' < '), s.values]),
    ),
    lines: Object.fromEntries(d.locationTable.slice(1).map((l) => [d.stringTable[d.functionTable[l.lines[0]!.functionIndex]!.nameStrindex], l.lines[0]!.line])),
  };
}

const EXPECTED = {
  'handle < main': [3n * PERIOD],
  'hash < (anonymous) < main': [1n * PERIOD],
  main: [1n * PERIOD],
  '(program)': [1n * PERIOD],
};

describe('cpuProfileToOtlp', () => {
  it.each([
    ['the samples array', { nodes: NODES, startTime: 1_000, endTime: 81_000, samples: [3, 3, 6, 5, 5, 2, 7, 3] }],
    ['hitCount when there are no samples', { nodes: NODES.map((n) => ({ ...n, hitCount: { 3: 3, 6: 1, 5: 2, 2: 1, 7: 1 }[n.id] ?? 0 })), startTime: 1_000, endTime: 81_000 }],
  ])('counts stacks from %s: value = samples x period, leaf first, without (root) and (idle)', (_how, profile) => {
    const { stacks } = resolve(profile as V8CpuProfile);
    expect(stacks).toEqual(EXPECTED);
  });

  it('describes a CPU profile in nanoseconds with the window, the period and the resource', () => {
    const { req, profile, strings, lines } = resolve({ nodes: NODES, startTime: 1_000, endTime: 81_000, samples: [3] });
    expect(strings[0]).toBe('');
    expect([strings[profile.sampleType!.typeStrindex], strings[profile.sampleType!.unitStrindex]]).toEqual(['cpu', 'nanoseconds']);
    expect([strings[profile.periodType!.typeStrindex], strings[profile.periodType!.unitStrindex]]).toEqual(['cpu', 'nanoseconds']);
    expect(profile.period).toBe(PERIOD);
    expect(profile.durationNano).toBe(80_000_000n); // V8 times are microseconds
    expect(profile.timeUnixNano).toBe(META.startUnixNano);
    expect(profile.profileId.length).toBe(16);
    // Only the locations the samples use; lines 1-based.
    expect(lines).toEqual({ handle: 20n, main: 10n });
    const attrs = req.resourceProfiles[0]!.resource!.attributes.map((a) => [a.key, a.value?.value.value]);
    expect(attrs).toEqual([['service.name', 'router'], ['deployment.environment', 'self-monitoring']]);
  });

  it('gives an empty profile when every sample was idle', () => {
    const { profile, stacks } = resolve({ nodes: NODES, startTime: 0, endTime: 10, samples: [5, 5] });
    expect(profile.samples).toEqual([]);
    expect(stacks).toEqual({});
  });
});
