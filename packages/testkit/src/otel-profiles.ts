import {
  ExportProfilesServiceRequestSchema,
  create,
  toBinary,
  toJson,
  type JsonValue,
  type MessageInitShape,
} from '@floe/proto';
import type { Credentials } from './otel.ts';

/**
 * A hand-built OTLP profiles export (v1development, v1.10/v1.11 layout) for end-to-end tests, as
 * no OpenTelemetry SDK exports profiles yet: one request whose dictionary two profiles share, a
 * CPU profile (process_cpu:cpu:nanoseconds:cpu:nanoseconds, four samples over three stacks, 65 ms
 * in all, linked to a span) and a heap profile (memory:alloc_space:bytes:space:bytes, 5120 bytes),
 * with shared stacks, several functions, an inlined location, an unsymbolized location known only
 * by its mapping, and attributes of every type on the profile and the resource.
 */

/** An ExportProfilesServiceRequest as its init shape (what @floe/proto's create takes). */
export type ProfilesRequestInit = MessageInitShape<typeof ExportProfilesServiceRequestSchema>;
type ProfileInit = NonNullable<NonNullable<NonNullable<ProfilesRequestInit['resourceProfiles']>[number]['scopeProfiles']>[number]['profiles']>[number];

const STRINGS = [
  '',
  'cpu',
  'nanoseconds',
  'alloc_space',
  'bytes',
  'space',
  'main',
  'handleCheckout',
  'computeTotal',
  'hash',
  'memmove',
  '/usr/lib/x86_64-linux-gnu/libc.so.6',
  'thread.name',
  'thread.id',
  'load',
  'sampled',
  'checkout.go',
] as const;
const S = Object.fromEntries(STRINGS.map((s, i) => [s, i])) as Record<(typeof STRINGS)[number], number>;
const str = (value: string) => ({ value: { case: 'stringValue' as const, value } });

/** The CPU profile's id. */
export const SAMPLE_PROFILE_ID_HEX = '0f0e0d0c0b0a09080706050403020100';

/** The CPU profile's stacks as stored: leaf first, the inlined hash before its caller. */
export const SAMPLE_CPU_STACKS = [
  ['memmove', 'hash', 'computeTotal', 'handleCheckout', 'main'],
  ['hash', 'computeTotal', 'handleCheckout', 'main'],
  ['/usr/lib/x86_64-linux-gnu/libc.so.6', 'handleCheckout', 'main'],
];

/**
 * The sample request for one service; the CPU profile's samples link `link` (but the last), both
 * profiles are at `nowNs`. `badProfile` adds a third profile naming stack 42, out of range.
 */
export function sampleProfilesRequest(service: string, link: { traceId: string; spanId: string }, nowNs: bigint, badProfile = false): ProfilesRequestInit {
  const profiles: ProfileInit[] = [
    {
      sampleType: { typeStrindex: S.cpu, unitStrindex: S.nanoseconds },
      periodType: { typeStrindex: S.cpu, unitStrindex: S.nanoseconds },
      period: 10_000_000n,
      timeUnixNano: nowNs,
      durationNano: 10_000_000_000n,
      profileId: Buffer.from(SAMPLE_PROFILE_ID_HEX, 'hex'),
      attributeIndices: [1, 2, 3, 4],
      samples: [
        { stackIndex: 1, values: [30_000_000n], linkIndex: 1, attributeIndices: [1] },
        { stackIndex: 2, values: [20_000_000n], linkIndex: 1 },
        { stackIndex: 1, values: [10_000_000n], linkIndex: 1 }, // the first stack again
        { stackIndex: 3, values: [5_000_000n], timestampsUnixNano: [nowNs + 1000n] },
      ],
    },
    {
      sampleType: { typeStrindex: S.alloc_space, unitStrindex: S.bytes },
      periodType: { typeStrindex: S.space, unitStrindex: S.bytes },
      period: 524_288n,
      timeUnixNano: nowNs,
      durationNano: 10_000_000_000n,
      samples: [
        { stackIndex: 2, values: [4096n] },
        { stackIndex: 4, values: [1024n] },
      ],
    },
  ];
  if (badProfile) profiles.push({ sampleType: { typeStrindex: S.cpu, unitStrindex: S.nanoseconds }, timeUnixNano: nowNs, samples: [{ stackIndex: 42, values: [1n] }] });
  return {
    dictionary: {
      stringTable: [...STRINGS],
      functionTable: [
        {},
        { nameStrindex: S.main, filenameStrindex: S['checkout.go'] },
        { nameStrindex: S.handleCheckout, filenameStrindex: S['checkout.go'] },
        { nameStrindex: S.computeTotal, filenameStrindex: S['checkout.go'] },
        { nameStrindex: S.hash },
        { nameStrindex: S.memmove },
      ],
      mappingTable: [{}, { filenameStrindex: S['/usr/lib/x86_64-linux-gnu/libc.so.6'], memoryStart: 0x7f00_0000_0000n, memoryLimit: 0x7f00_0020_0000n }],
      locationTable: [
        {},
        { lines: [{ functionIndex: 1, line: 12n }] }, // 1: main
        { lines: [{ functionIndex: 2, line: 40n }] }, // 2: handleCheckout
        { lines: [{ functionIndex: 4, line: 7n }, { functionIndex: 3, line: 88n }] }, // 3: hash inlined into computeTotal
        { lines: [{ functionIndex: 5 }] }, // 4: memmove
        { mappingIndex: 1, address: 0x7f00_0001_2345n }, // 5: unsymbolized, in libc
      ],
      stackTable: [
        {},
        { locationIndices: [4, 3, 2, 1] }, // 1: memmove ← hash ← computeTotal ← handleCheckout ← main
        { locationIndices: [3, 2, 1] }, // 2: its leaf location holds two frames (hash inlined into computeTotal)
        { locationIndices: [5, 2, 1] }, // 3: an unsymbolized libc frame
        { locationIndices: [2, 1] }, // 4: used by the heap profile only
      ],
      linkTable: [{}, { traceId: Buffer.from(link.traceId, 'hex'), spanId: Buffer.from(link.spanId, 'hex') }],
      attributeTable: [
        {},
        { keyStrindex: S['thread.name'], value: str('worker-1') },
        { keyStrindex: S['thread.id'], value: { value: { case: 'intValue', value: 42n } } },
        { keyStrindex: S.load, value: { value: { case: 'doubleValue', value: 0.75 } } },
        { keyStrindex: S.sampled, value: { value: { case: 'boolValue', value: true } } },
      ],
    },
    resourceProfiles: [
      {
        resource: { attributes: [{ key: 'service.name', value: str(service) }, { key: 'host.cpus', value: { value: { case: 'intValue', value: 8n } } }] },
        scopeProfiles: [{ scope: { name: 'floe-e2e-profiler', version: '0.9.0' }, profiles }],
      },
    ],
  };
}

/** OTLP/JSON as exporters write it: proto3 JSON with trace, span and profile ids in hex. */
export function profilesRequestJson(init: ProfilesRequestInit): string {
  const hexIds = (v: JsonValue): JsonValue => {
    if (Array.isArray(v)) return v.map(hexIds);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, ['traceId', 'spanId', 'profileId'].includes(k) && typeof x === 'string' ? Buffer.from(x, 'base64').toString('hex') : hexIds(x)]),
    );
  };
  return JSON.stringify(hexIds(toJson(ExportProfilesServiceRequestSchema, create(ExportProfilesServiceRequestSchema, init))));
}

export const profilesRequestProtobuf = (init: ProfilesRequestInit): Uint8Array => toBinary(ExportProfilesServiceRequestSchema, create(ExportProfilesServiceRequestSchema, init));

/** POSTs a profiles export as OTLP/HTTP protobuf to /v1development/profiles; resolves to the response. */
export function postProfiles(baseUrl: string, creds: Credentials, init: ProfilesRequestInit): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${creds.apiKey}`, 'x-tenant-id': creds.tenant, 'content-type': 'application/x-protobuf' };
  if (creds.dataset) headers['x-dataset-id'] = creds.dataset;
  return fetch(`${baseUrl}/v1development/profiles`, { method: 'POST', body: profilesRequestProtobuf(init), headers });
}
