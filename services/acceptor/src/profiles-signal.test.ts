import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TenantContext } from '@floe/auth';
import { FloeError } from '@floe/errors';
import { ExportProfilesServiceRequestSchema, ExportProfilesServiceResponseSchema, create, fromBinary, toBinary, toJson, type JsonValue, type MessageInitShape } from '@floe/proto';
import { WalAppender, columnBatchRows, createObjectStore, listSegments, readSegment, type ObjectStore } from '@floe/storage';
import { createLogger, type Logger } from '@floe/telemetry';
import { AcceptedTimes } from './accepted-times.ts';
import { Ingest } from './ingest.ts';
import { profilesSignal } from './profiles-signal.ts';
import { SIGNALS } from './signals.ts';

/**
 * The profiles signal through the acceptor's real ingest path (decode → rows → a durable WAL
 * segment in a real file store), and its logging: accepted requests at debug level only.
 */

type Init = MessageInitShape<typeof ExportProfilesServiceRequestSchema>;

const NOW = BigInt(Date.now()) * 1_000_000n;
const TRACE_HEX = '5b8aa5a2d2c872e8321cf37308d69df2';
const SPAN_HEX = '051581bf3cb55c13';

const request = (badStack = false): Init => ({
  dictionary: {
    stringTable: ['', 'cpu', 'nanoseconds', 'main', 'work'],
    functionTable: [{}, { nameStrindex: 3 }, { nameStrindex: 4 }],
    locationTable: [{}, { lines: [{ functionIndex: 1 }] }, { lines: [{ functionIndex: 2 }] }],
    stackTable: [{}, { locationIndices: [2, 1] }],
    linkTable: [{}, { traceId: Buffer.from(TRACE_HEX, 'hex'), spanId: Buffer.from(SPAN_HEX, 'hex') }],
  },
  resourceProfiles: [
    {
      resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: 'svc' } } }] },
      scopeProfiles: [
        {
          profiles: [
            { sampleType: { typeStrindex: 1, unitStrindex: 2 }, timeUnixNano: NOW, samples: [{ stackIndex: 1, values: [100n], linkIndex: 1 }] },
            { sampleType: { typeStrindex: 1, unitStrindex: 2 }, timeUnixNano: NOW, samples: [{ stackIndex: badStack ? 9 : 1, values: [1n] }] },
          ],
        },
      ],
    },
  ],
});

/** OTLP/JSON as exporters write it: proto3 JSON with the ids in hex instead of base64. */
function otlpJson(init: Init): string {
  const json = toJson(ExportProfilesServiceRequestSchema, create(ExportProfilesServiceRequestSchema, init));
  const hexIds = (v: JsonValue): JsonValue => {
    if (Array.isArray(v)) return v.map(hexIds);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, ['traceId', 'spanId', 'profileId'].includes(k) && typeof x === 'string' ? Buffer.from(x, 'base64').toString('hex') : hexIds(x)]),
    );
  };
  return JSON.stringify(hexIds(json));
}

const ctx: TenantContext = { tenant: 'acme', dataset: 'default', principal: 'k1', scopes: ['ingest'], isAdmin: false };

describe('profiles signal', () => {
  let dir: string;
  let store: ObjectStore;
  let wal: WalAppender;
  let logFile: string;
  let fd: number | undefined;
  let log: Logger;

  const setup = (level: string) => {
    fd = openSync(logFile, 'w');
    log = createLogger({ level, fd });
    return new Ingest(wal, log);
  };
  const logLines = async () => {
    await new Promise<void>((resolve) => log.flush(() => resolve()));
    return readFileSync(logFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: string; msg: string; profiles?: number; rejected?: number });
  };
  const walRecords = async () => (await Promise.all((await listSegments(store)).map((s) => readSegment(store, s.key)))).flat();

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'floe-profiles-signal-'));
    store = createObjectStore({ kind: 'fs', root: join(dir, 'store') });
    wal = new WalAppender(store, { instanceId: 'acc-profiles' });
    logFile = join(dir, 'log.ndjson');
  });
  afterEach(async () => {
    await wal.close();
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('is registered for HTTP /v1development/profiles and gRPC ProfilesService/Export', () => {
    expect(SIGNALS).toContain(profilesSignal);
    expect(profilesSignal.httpPath).toBe('/v1development/profiles');
    expect(profilesSignal.grpcMethod).toBe('/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export');
  });

  it('JSON with hex ids lands in the WAL as profiles rows; partial success names rejected_profiles; logged at debug only', async () => {
    const ingest = setup('debug');
    const result = await profilesSignal.ingest(ingest, ctx, Buffer.from(otlpJson(request(true))), 'json', AcceptedTimes.ANY);
    expect(result).toEqual({ accepted: 1, rejected: 1, rejectReason: 'profile references stack_index 9, out of range of the stack_table (2 entries)' });
    expect(profilesSignal.response(result, 'json')).toEqual({
      partialSuccess: { rejectedProfiles: '1', errorMessage: 'profile references stack_index 9, out of range of the stack_table (2 entries)' },
    });

    const records = await walRecords();
    expect(records.map((r) => r.header)).toMatchObject([{ tenant: 'acme', dataset: 'default', table: 'profiles', rows: 1 }]);
    const [row] = await columnBatchRows([records[0]!.payload]);
    expect(row).toMatchObject({ service_name: 'svc', trace_id: TRACE_HEX, span_id: SPAN_HEX, total_value: 100, stacktraces_json: '[["work","main"]]' });

    const lines = await logLines();
    expect(lines).toEqual([expect.objectContaining({ level: 'debug', msg: 'profiles accepted', profiles: 1, rejected: 1 })]);
  });

  it('protobuf: a full success is an empty response; nothing is logged above debug', async () => {
    const ingest = setup('info');
    const body = toBinary(ExportProfilesServiceRequestSchema, create(ExportProfilesServiceRequestSchema, request()));
    const result = await profilesSignal.ingest(ingest, ctx, body, 'protobuf', AcceptedTimes.ANY);
    expect(result).toEqual({ accepted: 2, rejected: 0, rejectReason: undefined });
    const resp = profilesSignal.response(result, 'protobuf') as Uint8Array;
    expect(resp).toHaveLength(0);
    expect(fromBinary(ExportProfilesServiceResponseSchema, resp).partialSuccess).toBeUndefined();
    expect((await walRecords()).map((r) => r.header.rows)).toEqual([2]);
    expect(await logLines()).toEqual([]);
  });

  it('a body that is not an ExportProfilesServiceRequest is bad_data, and nothing is appended', async () => {
    const ingest = setup('debug');
    for (const [body, format] of [
      [Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x99, 0x01]), 'protobuf'],
      [Buffer.from('{"resourceProfiles": {"x": 1}}'), 'json'],
      [Buffer.from('{"resourceProfiles": ['), 'json'],
    ] as const) {
      // Decoding throws before any promise exists (HTTP and gRPC both call ingest inside a promise chain).
      const err = await Promise.resolve()
        .then(() => profilesSignal.ingest(ingest, ctx, body, format, AcceptedTimes.ANY))
        .then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(FloeError);
      expect(err).toMatchObject({ kind: 'bad_data', message: expect.stringMatching(/ExportProfilesServiceRequest/) });
    }
    expect(await walRecords()).toEqual([]);
    expect(await logLines()).toEqual([]);
  });
});
