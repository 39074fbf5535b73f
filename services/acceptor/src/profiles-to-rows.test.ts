import { describe, expect, it } from 'vitest';
import { ExportProfilesServiceRequestSchema, create, toBinary, type ExportProfilesServiceRequest, type MessageInitShape, type Profile, type ProfilesDictionary } from '@floe/proto';
import { decodeMessage } from './decode.ts';
import { AcceptedTimes } from './accepted-times.ts';
import { profileTypeId, profilesToRows } from './profiles-to-rows.ts';
import { batchRows, type ConvertedRows } from './rows.ts';

/** Init shapes only (not messages), so they can be spread and partially overridden. */
type Init = Exclude<MessageInitShape<typeof ExportProfilesServiceRequestSchema>, ExportProfilesServiceRequest>;
type DictInit = Exclude<NonNullable<Init['dictionary']>, ProfilesDictionary>;
type ProfileInit = Exclude<NonNullable<NonNullable<NonNullable<Init['resourceProfiles']>[number]['scopeProfiles']>[number]['profiles']>[number], Profile>;

const HOUR = 3_600_000_000_000n;
const T = 490_000n * HOUR + 1_234_567_891n; // inside hour 490000
const RECEIVED = 490_007n * HOUR + 5n;

const str = (value: string) => ({ value: { case: 'stringValue' as const, value } });
const int = (value: bigint) => ({ value: { case: 'intValue' as const, value } });
const dbl = (value: number) => ({ value: { case: 'doubleValue' as const, value } });
const bool = (value: boolean) => ({ value: { case: 'boolValue' as const, value } });
const bytes = (value: Uint8Array) => ({ value: { case: 'bytesValue' as const, value } });
const arr = (...values: object[]) => ({ value: { case: 'arrayValue' as const, value: { values } } });
const kv = (entries: Record<string, object>) => ({ value: { case: 'kvlistValue' as const, value: { values: Object.entries(entries).map(([key, value]) => ({ key, value })) } } });

const TRACE = Uint8Array.from({ length: 16 }, (_, i) => i + 1);
const SPAN = Uint8Array.from({ length: 8 }, (_, i) => 0xa0 + i);
const TRACE2 = Uint8Array.from({ length: 16 }, (_, i) => 0x40 + i);
const SPAN2 = Uint8Array.from({ length: 8 }, (_, i) => 0x10 + i);
const PROFILE_ID = Uint8Array.from({ length: 16 }, (_, i) => 0xf0 - i);

/** The string table, by name: S.main is the index of "main". */
const STRINGS = [
  '',
  'cpu',
  'nanoseconds',
  'main',
  'compute',
  'hash',
  'memmove',
  '/usr/lib/libc.so.6',
  'thread.name',
  'thread.id',
  'weight',
  'sampled',
  'tags',
  'ctx',
  'raw',
  'big',
  'runtime.sysfn',
  'alloc_space',
  'bytes',
  'space',
  'profile.kind',
  'ms',
] as const;
const S = Object.fromEntries(STRINGS.map((s, i) => [s, i])) as Record<(typeof STRINGS)[number], number>;

/**
 * A dictionary shared by every profile of the request: five named functions (one known only by
 * its system name), an inlined location (hash inlined into compute: two lines, callee first), a
 * location with only a mapping, one with only an address, stacks that share locations, two links
 * and attributes of every value type.
 */
const dictionary: DictInit = {
  stringTable: [...STRINGS],
  functionTable: [
    {},
    { nameStrindex: S.main },
    { nameStrindex: S.compute },
    { nameStrindex: S.hash },
    { nameStrindex: S.memmove, systemNameStrindex: S.memmove },
    { systemNameStrindex: S['runtime.sysfn'] },
  ],
  mappingTable: [{}, { filenameStrindex: S['/usr/lib/libc.so.6'], memoryStart: 0x1000n, memoryLimit: 0x9000n }],
  locationTable: [
    {},
    { lines: [{ functionIndex: 1, line: 10n }] }, // 1: main
    { lines: [{ functionIndex: 3, line: 40n }, { functionIndex: 2, line: 22n }] }, // 2: hash inlined into compute
    { lines: [{ functionIndex: 4 }] }, // 3: memmove
    { mappingIndex: 1, address: 0x1234n }, // 4: unsymbolized, in libc
    { address: 0xabcn }, // 5: unsymbolized, no mapping
    { lines: [{ functionIndex: 5 }] }, // 6: system name only
  ],
  stackTable: [
    {},
    { locationIndices: [3, 2, 1] }, // 1: memmove ← hash ← compute ← main
    { locationIndices: [2, 1] }, // 2: hash ← compute ← main
    { locationIndices: [4, 1] }, // 3: libc ← main
    { locationIndices: [5, 6, 1] }, // 4: 0xabc ← runtime.sysfn ← main
  ],
  linkTable: [{}, { traceId: TRACE, spanId: SPAN }, { traceId: TRACE2, spanId: SPAN2 }],
  attributeTable: [
    {},
    { keyStrindex: S['thread.name'], value: str('main') }, // 1
    { keyStrindex: S['thread.id'], value: int(7n) }, // 2
    { keyStrindex: S.weight, value: dbl(0.5), unitStrindex: S.ms }, // 3
    { keyStrindex: S.sampled, value: bool(true) }, // 4
    { keyStrindex: S.tags, value: arr(str('a'), int(1n)) }, // 5
    { keyStrindex: S.ctx, value: kv({ k: str('v') }) }, // 6
    { keyStrindex: S.raw, value: bytes(Uint8Array.of(1, 2, 3)) }, // 7
    { keyStrindex: S.big, value: int(9_007_199_254_740_993n) }, // 8
    { keyStrindex: S['profile.kind'], value: str('cpu') }, // 9
  ],
};

const cpuProfile = (extra: Partial<ProfileInit> = {}): ProfileInit => ({
  sampleType: { typeStrindex: S.cpu, unitStrindex: S.nanoseconds },
  periodType: { typeStrindex: S.cpu, unitStrindex: S.nanoseconds },
  period: 10_000_000n,
  timeUnixNano: T,
  durationNano: 10_000_000_000n,
  profileId: PROFILE_ID,
  attributeIndices: [1, 2, 3, 4, 5, 6, 7, 8],
  samples: [
    { stackIndex: 1, values: [10n, 20n], timestampsUnixNano: [T + 1n, T + 2n], linkIndex: 1, attributeIndices: [1, 2] },
    { stackIndex: 2, values: [5n], linkIndex: 1 },
    { stackIndex: 1, values: [7n], linkIndex: 2 }, // the same stack again, another span
    { stackIndex: 3, values: [3n], attributeIndices: [3, 4, 5, 6, 7, 8] },
    { stackIndex: 4, timestampsUnixNano: [T + 3n] }, // timestamps only: counts 1
    { stackIndex: 0, values: [0n] }, // the zero stack
  ],
  ...extra,
});

const request = (profiles: ProfileInit[], extra: Partial<Init> = {}): Init => ({
  dictionary,
  resourceProfiles: [
    {
      resource: { attributes: [{ key: 'service.name', value: str('shop') }, { key: 'host.cpus', value: int(4n) }] },
      scopeProfiles: [{ scope: { name: 'ebpf-profiler', version: '1.2.3' }, profiles }],
    },
  ],
  ...extra,
});

function rowsOf(r: ConvertedRows): Array<Record<string, unknown>> {
  return [...r.byHour.values()].flatMap((b) => batchRows(b));
}

const convert = (init: Init) => profilesToRows(create(ExportProfilesServiceRequestSchema, init), RECEIVED);

const EXPECTED_STACKS = [
  ['memmove', 'hash', 'compute', 'main'],
  ['hash', 'compute', 'main'],
  ['/usr/lib/libc.so.6', 'main'],
  ['0xabc', 'runtime.sysfn', 'main'],
  [],
];

const EXPECTED_SAMPLES = [
  {
    stack: 0,
    value: 30,
    values: [10, 20],
    timestamps: [String(T + 1n), String(T + 2n)],
    attributes: { 'thread.name': 'main', 'thread.id': 7 },
    trace_id: '0102030405060708090a0b0c0d0e0f10',
    span_id: 'a0a1a2a3a4a5a6a7',
  },
  { stack: 1, value: 5, values: [5], trace_id: '0102030405060708090a0b0c0d0e0f10', span_id: 'a0a1a2a3a4a5a6a7' },
  { stack: 0, value: 7, values: [7], trace_id: '404142434445464748494a4b4c4d4e4f', span_id: '1011121314151617' },
  { stack: 2, value: 3, values: [3], attributes: { weight: 0.5, sampled: true, tags: ['a', 1], ctx: { k: 'v' }, raw: 'AQID', big: '9007199254740993' } },
  { stack: 3, value: 1, values: [], timestamps: [String(T + 3n)] },
  { stack: 4, value: 0, values: [0] },
];

describe('profilesToRows', () => {
  it('resolves the dictionary: one self-contained row per profile, stacks as function names, leaf first', () => {
    const r = convert(request([cpuProfile()]));
    expect(r).toMatchObject({ accepted: 1, rejected: 0, rejectReason: undefined });
    expect([...r.byHour.keys()]).toEqual([490_000]);
    const [row] = rowsOf(r);
    expect(row).toEqual({
      time_unix_nano: T.toString(),
      service_name: 'shop',
      profile_id: 'f0efeeedecebeae9e8e7e6e5e4e3e2e1',
      profile_type: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
      sample_type: 'cpu',
      sample_unit: 'nanoseconds',
      period_type: 'cpu',
      period_unit: 'nanoseconds',
      period: 10_000_000,
      duration_nano: 10_000_000_000,
      // Span 1 carries 35 of the 46, span 2 only 7.
      trace_id: '0102030405060708090a0b0c0d0e0f10',
      span_id: 'a0a1a2a3a4a5a6a7',
      total_value: 46,
      samples_json: expect.any(String),
      stacktraces_json: expect.any(String),
      scope_name: 'ebpf-profiler',
      scope_version: '1.2.3',
      profile_attr_str: {
        'thread.name': 'main',
        tags: '{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"1"}]}}',
        ctx: '{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}',
        raw: 'AQID',
      },
      profile_attr_int: { 'thread.id': 7, big: '9007199254740993' },
      profile_attr_double: { weight: 0.5 },
      profile_attr_bool: { sampled: true },
      resource_attr_str: { 'service.name': 'shop' },
      resource_attr_int: { 'host.cpus': 4 },
      resource_attr_double: {},
      resource_attr_bool: {},
    });
    // Shared stacks are stored once; samples point at them.
    expect(JSON.parse(row!.stacktraces_json as string)).toEqual(EXPECTED_STACKS);
    expect(JSON.parse(row!.samples_json as string)).toEqual(EXPECTED_SAMPLES);
  });

  it('protobuf round trip: the decoded wire bytes give the same rows', () => {
    const bin = toBinary(ExportProfilesServiceRequestSchema, create(ExportProfilesServiceRequestSchema, request([cpuProfile()])));
    const decoded = decodeMessage(ExportProfilesServiceRequestSchema, bin, 'protobuf');
    expect(rowsOf(profilesToRows(decoded, RECEIVED))).toEqual(rowsOf(convert(request([cpuProfile()]))));
  });

  it('accepted times: a profile outside is rejected before its dictionary is resolved; one without a time takes the receive time', () => {
    // RECEIVED - 1 h to RECEIVED + 1 m: T (seven hours back) is too old, RECEIVED + 1 h too new.
    const times = new AcceptedTimes(Number(RECEIVED / 1_000_000n), 3_600_000, 60_000);
    const out = profilesToRows(
      create(ExportProfilesServiceRequestSchema, request([cpuProfile(), cpuProfile({ timeUnixNano: RECEIVED + HOUR }), cpuProfile({ timeUnixNano: 0n }), cpuProfile({ timeUnixNano: RECEIVED - 1_000_000n })])),
      RECEIVED,
      {},
      times,
    );
    expect([out.accepted, out.rejected]).toEqual([2, 2]);
    expect(out.rejectReason).toMatch(/^profile time is more than 1h in the past \(limits\.ingest_max_age; oldest accepted: /);
    expect(rowsOf(out).map((r) => r.time_unix_nano)).toEqual([RECEIVED.toString(), (RECEIVED - 1_000_000n).toString()]);
    // Refused first, so a profile whose stacks are out of range is counted once, for its time.
    const broken = profilesToRows(create(ExportProfilesServiceRequestSchema, request([cpuProfile({ timeUnixNano: RECEIVED + HOUR, samples: [{ stackIndex: 99, values: [1n] }] })])), RECEIVED, {}, times);
    expect([broken.rejected, broken.rejectReason?.startsWith('profile time is more than 1m in the future')]).toEqual([1, true]);
  });

  it('several profiles share the dictionary; each keeps its own type, stacks and link', () => {
    const heap: ProfileInit = {
      sampleType: { typeStrindex: S.alloc_space, unitStrindex: S.bytes },
      periodType: { typeStrindex: S.space, unitStrindex: S.bytes },
      period: 524_288n,
      timeUnixNano: 0n, // unset: the receive time
      attributeIndices: [9],
      samples: [{ stackIndex: 2, values: [4096n, 9_007_199_254_740_993n] }],
    };
    const rows = rowsOf(convert(request([cpuProfile(), heap])));
    expect(rows).toHaveLength(2);
    const h = rows.find((r) => r.sample_type === 'alloc_space')!;
    expect(h).toMatchObject({
      time_unix_nano: RECEIVED.toString(),
      profile_id: null,
      profile_type: 'memory:alloc_space:bytes:space:bytes',
      sample_unit: 'bytes',
      period: 524_288,
      duration_nano: 0,
      trace_id: null,
      span_id: null,
      total_value: '9007199254745089',
      profile_attr_str: { 'profile.kind': 'cpu' },
    });
    expect(JSON.parse(h.stacktraces_json as string)).toEqual([['hash', 'compute', 'main']]);
    expect(JSON.parse(h.samples_json as string)).toEqual([{ stack: 0, value: '9007199254745089', values: [4096, '9007199254740993'] }]);
  });

  it.each<[string, Partial<ProfileInit>, Partial<DictInit>, RegExp]>([
    ['a stack index beyond the stack_table', { samples: [{ stackIndex: 99, values: [1n] }] }, {}, /stack_index 99, out of range of the stack_table \(5 entries\)/],
    ['a negative stack index', { samples: [{ stackIndex: -1, values: [1n] }] }, {}, /stack_index -1/],
    ['a location index beyond the location_table', { samples: [{ stackIndex: 5, values: [1n] }] }, { stackTable: [...dictionary.stackTable!, { locationIndices: [1, 42] }] }, /location_index 42/],
    ['a function index beyond the function_table', { samples: [{ stackIndex: 5, values: [1n] }] }, { stackTable: [...dictionary.stackTable!, { locationIndices: [7] }], locationTable: [...dictionary.locationTable!, { lines: [{ functionIndex: 17 }] }] }, /function_index 17/],
    ['a function name beyond the string_table', { samples: [{ stackIndex: 5, values: [1n] }] }, { stackTable: [...dictionary.stackTable!, { locationIndices: [7] }], locationTable: [...dictionary.locationTable!, { lines: [{ functionIndex: 6 }] }], functionTable: [...dictionary.functionTable!, { nameStrindex: 500 }] }, /name_strindex 500/],
    ['a mapping index beyond the mapping_table', { samples: [{ stackIndex: 5, values: [1n] }] }, { stackTable: [...dictionary.stackTable!, { locationIndices: [7] }], locationTable: [...dictionary.locationTable!, { mappingIndex: 3 }] }, /mapping_index 3/],
    ['a link index beyond the link_table', { samples: [{ stackIndex: 1, values: [1n], linkIndex: 3 }] }, {}, /link_index 3/],
    ['a sample attribute beyond the attribute_table', { samples: [{ stackIndex: 1, values: [1n], attributeIndices: [1, 10] }] }, {}, /sample attribute_indices 10/],
    ['a profile attribute beyond the attribute_table', { attributeIndices: [11] }, {}, /attribute_indices 11/],
    ['a sample type beyond the string_table', { sampleType: { typeStrindex: 22, unitStrindex: 2 } }, {}, /sample_type type_strindex 22/],
    ['an attribute key beyond the string_table', { attributeIndices: [10] }, { attributeTable: [...dictionary.attributeTable!, { keyStrindex: 77, value: str('x') }] }, /key_strindex 77/],
    ['a link with a short trace id', { samples: [{ stackIndex: 1, values: [1n], linkIndex: 3 }] }, { linkTable: [...dictionary.linkTable!, { traceId: new Uint8Array(5), spanId: SPAN }] }, /invalid trace_id/],
    ['values and timestamps of different lengths', { samples: [{ stackIndex: 1, values: [1n, 2n], timestampsUnixNano: [T] }] }, {}, /2 values and 1 timestamps/],
    ['a 3-byte profile id', { profileId: Uint8Array.of(1, 2, 3) }, {}, /invalid profile_id/],
    ['a time beyond int64', { timeUnixNano: 1n << 63n }, {}, /beyond the int64 range/],
    ['a total value beyond int64', { samples: [{ stackIndex: 1, values: [(1n << 62n) + 1n, 1n << 62n] }] }, {}, /total sample value beyond the int64 range/],
  ])('%s rejects that profile only (partial success)', (_name, bad, dictExtra, reason) => {
    const r = convert(request([cpuProfile(), cpuProfile(bad), cpuProfile({ profileId: new Uint8Array(0) })], { dictionary: { ...dictionary, ...dictExtra } }));
    expect(r.accepted).toBe(2);
    expect(r.rejected).toBe(1);
    expect(r.rejectReason).toMatch(reason);
    const rows = rowsOf(r);
    expect(rows.map((row) => row.profile_id)).toEqual(['f0efeeedecebeae9e8e7e6e5e4e3e2e1', null]);
    expect(JSON.parse(rows[1]!.stacktraces_json as string)).toEqual(EXPECTED_STACKS);
  });

  it('a profile resolving to more than the row cap is rejected (the writer could not read the row); so are profiles beyond the request cap', () => {
    const req = create(ExportProfilesServiceRequestSchema, request([cpuProfile(), cpuProfile({ samples: [{ stackIndex: 2, values: [1n] }] })]));
    // A row holds its stacks, samples and the profile's attribute values.
    const attributeBytes = (r: Record<string, unknown>) =>
      ['profile_attr_str', 'profile_attr_int', 'profile_attr_double', 'profile_attr_bool'].flatMap((m) => Object.entries(r[m] as object)).reduce((n, [k, v]) => n + k.length + String(v).length, 0);
    const sizes = rowsOf(profilesToRows(req, RECEIVED)).map((r) => (r.samples_json as string).length + (r.stacktraces_json as string).length + attributeBytes(r));
    expect(sizes[0]).toBeGreaterThan(sizes[1]!);

    const rowCapped = profilesToRows(req, RECEIVED, { rowMax: sizes[1]! + 50 });
    expect(rowCapped).toMatchObject({ accepted: 1, rejected: 1, rejectReason: expect.stringMatching(/^profile resolves to more than \d+ bytes of stacks and samples/) });
    expect(rowsOf(rowCapped)[0]!.total_value).toBe(1);

    const stackCapped = profilesToRows(req, RECEIVED, { rowMax: 20 });
    expect(stackCapped).toMatchObject({ accepted: 0, rejected: 2, rejectReason: expect.stringMatching(/^profile references stack 1, which resolves to more than 20 bytes/) });

    const requestCapped = profilesToRows(req, RECEIVED, { requestMax: sizes[0]! + 10 });
    expect(requestCapped).toMatchObject({ accepted: 1, rejected: 1, rejectReason: expect.stringMatching(/^request resolves to more than \d+ bytes/) });
    expect(rowsOf(requestCapped)[0]!.total_value).toBe(46);
  });

  it('the work of profiles rejected half way counts against the request cap, and a stack too large is resolved once', () => {
    // Stack 1 repeats a location of 50 one-letter lines 10 times: 500 frames, 2,000 bytes of names.
    const dict: DictInit = {
      stringTable: ['', 'cpu', 'ns', 'f', 'main'],
      functionTable: [{}, { nameStrindex: 3 }, { nameStrindex: 4 }],
      locationTable: [{}, { lines: Array.from({ length: 50 }, () => ({ functionIndex: 1 })) }, { lines: [{ functionIndex: 2 }] }],
      stackTable: [{}, { locationIndices: new Array<number>(10).fill(1) }, { locationIndices: [2] }, { locationIndices: new Array<number>(9).fill(1) }],
    };
    const cpu = { sampleType: { typeStrindex: 1, unitStrindex: 2 }, timeUnixNano: T };
    const ok = { ...cpu, samples: [{ stackIndex: 2, values: [7n] }] };
    const overflowing = (stackIndex: number) => ({ ...cpu, samples: [{ stackIndex, values: [1n << 62n, 1n << 62n] }] });
    const req = (profiles: ProfileInit[]) => create(ExportProfilesServiceRequestSchema, request(profiles, { dictionary: dict }));

    // Past the row cap: rejected for every profile that uses it, resolved the first time only.
    const tooLarge = profilesToRows(req([...Array.from({ length: 50 }, () => ({ ...cpu, samples: [{ stackIndex: 1, values: [1n] }] })), ok]), RECEIVED, { rowMax: 1000 });
    expect(tooLarge).toMatchObject({ accepted: 1, rejected: 50, rejectReason: 'profile references stack 1, which resolves to more than 1000 bytes of frame names' });

    // Profiles rejected after their stacks were resolved (a total beyond int64) spend the request's cap.
    const spent = profilesToRows(req([overflowing(3), overflowing(1), ok]), RECEIVED, { requestMax: 3000 });
    expect(spent).toMatchObject({ accepted: 0, rejected: 3, rejectReason: 'profile has a total sample value beyond the int64 range' });
    expect(profilesToRows(req([overflowing(3), ok]), RECEIVED, { requestMax: 3000 })).toMatchObject({ accepted: 1, rejected: 1 });
  });

  it("a dictionary attribute named by many profiles counts in each one's row: a 1 KB value sent once does not become a kilobyte in every row for free", () => {
    const dict: DictInit = { stringTable: ['', 'cpu', 'ns', 'note'], attributeTable: [{}, { keyStrindex: 3, value: str('x'.repeat(1000)) }] };
    const profile = { sampleType: { typeStrindex: 1, unitStrindex: 2 }, timeUnixNano: T, attributeIndices: [1], samples: [{ values: [1n] }] };
    const out = profilesToRows(create(ExportProfilesServiceRequestSchema, request(new Array<ProfileInit>(10).fill(profile), { dictionary: dict })), RECEIVED, { requestMax: 5000 });
    expect(out).toMatchObject({ accepted: 4, rejected: 6, rejectReason: 'request resolves to more than 5000 bytes of stacks and samples; send fewer profiles per request' });
    expect(rowsOf(out)[0]!.profile_attr_str).toEqual({ note: 'x'.repeat(1000) });
  });

  it('without a dictionary every index but 0 is out of range; index 0 is the zero value', () => {
    const ok = convert({ resourceProfiles: [{ scopeProfiles: [{ profiles: [{ timeUnixNano: T, samples: [{ values: [3n] }] }] }] }] });
    expect(ok).toMatchObject({ accepted: 1, rejected: 0 });
    expect(rowsOf(ok)[0]).toMatchObject({
      service_name: 'unknown_service',
      sample_type: '',
      profile_type: 'process_cpu::::',
      total_value: 3,
      stacktraces_json: '[[]]',
      samples_json: '[{"stack":0,"value":3,"values":[3]}]',
    });
    const bad = convert({ resourceProfiles: [{ scopeProfiles: [{ profiles: [{ timeUnixNano: T, samples: [{ stackIndex: 1, values: [3n] }] }] }] }] });
    expect(bad).toMatchObject({ accepted: 0, rejected: 1, rejectReason: 'profile references stack_index 1, out of range of the stack_table (0 entries)' });
  });
});

describe('profileTypeId', () => {
  it.each([
    [['cpu', 'nanoseconds', 'cpu', 'nanoseconds'], 'process_cpu:cpu:nanoseconds:cpu:nanoseconds'],
    [['samples', 'count', 'cpu', 'nanoseconds'], 'process_cpu:samples:count:cpu:nanoseconds'],
    [['inuse_space', 'bytes', 'space', 'bytes'], 'memory:inuse_space:bytes:space:bytes'],
    [['alloc_objects', 'count', '', ''], 'memory:alloc_objects:count::'],
    [['goroutine', 'count', 'goroutine', 'count'], 'goroutine:goroutine:count:goroutine:count'],
    [['off_cpu', 'nanoseconds', '', ''], 'off_cpu:off_cpu:nanoseconds::'],
    [['contentions', 'count', 'contentions', 'count'], 'contentions:contentions:count:contentions:count'],
    [['exceptions', 'count', '', ''], 'exceptions:exceptions:count::'],
    [['a:b', 'c', 'd', 'e'], 'd:a_b:c:d:e'],
  ] as const)('%j → %s', (parts, id) => {
    expect(profileTypeId(...(parts as unknown as [string, string, string, string]))).toBe(id);
  });
});
