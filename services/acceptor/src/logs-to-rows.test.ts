import { describe, expect, it } from 'vitest';
import {
  ExportLogsServiceRequestSchema,
  SeverityNumber,
  create,
  toBinary,
  toJson,
  type AnyValue,
  type JsonValue,
  type MessageInitShape,
} from '@floe/proto';
import { decodeMessage } from './decode.ts';
import { logsToRows } from './logs-to-rows.ts';
import { batchRows } from './rows.ts';

type Init = MessageInitShape<typeof ExportLogsServiceRequestSchema>;

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
const attr = (key: string, value: object) => ({ key, value });

/** Every attribute value type, as the typed maps split them. */
const everyType = (prefix: string) => [
  attr(`${prefix}.s`, str('text')),
  attr(`${prefix}.i`, int(42n)),
  attr(`${prefix}.big`, int(9_007_199_254_740_993n)),
  attr(`${prefix}.d`, dbl(0.25)),
  attr(`${prefix}.inf`, dbl(Number.POSITIVE_INFINITY)),
  attr(`${prefix}.b`, bool(true)),
  attr(`${prefix}.arr`, arr(str('a'), int(1n))),
  attr(`${prefix}.kv`, kv({ k: str('v') })),
  attr(`${prefix}.bytes`, bytes(Uint8Array.of(1, 2, 3))),
];

const everyTypeMaps = (prefix: string) => ({
  str: {
    [`${prefix}.s`]: 'text',
    [`${prefix}.arr`]: '{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"1"}]}}',
    [`${prefix}.kv`]: '{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}',
    [`${prefix}.bytes`]: 'AQID',
  },
  int: { [`${prefix}.i`]: 42, [`${prefix}.big`]: '9007199254740993' },
  double: { [`${prefix}.d`]: 0.25, [`${prefix}.inf`]: 'Infinity' },
  bool: { [`${prefix}.b`]: true },
});

const TRACE = Uint8Array.from({ length: 16 }, (_, i) => i + 1);
const SPAN = Uint8Array.from({ length: 8 }, (_, i) => 0xa0 + i);

type RecordInit = NonNullable<NonNullable<NonNullable<Init['resourceLogs']>[number]['scopeLogs']>[number]['logRecords']>[number];

function request(records: RecordInit[], resource = true): Init {
  return {
    resourceLogs: [
      {
        resource: resource ? { attributes: [attr('service.name', str('shop')), ...everyType('res')] } : undefined,
        scopeLogs: [{ scope: { name: 'floe-test', version: '1.2.3', attributes: everyType('scope') }, logRecords: records }],
      },
    ],
  };
}

const convert = (init: Init) => {
  const out = logsToRows(create(ExportLogsServiceRequestSchema, init), RECEIVED);
  const rows = [...out.byHour.values()].flatMap((b) => batchRows(b).map((r): Record<string, unknown> => ({ hour: b.hour, ...r })));
  return { out, rows };
};

describe('logsToRows', () => {
  it('converts a full record: times, severity, ids, flags, event name, scope, every attribute type at every scope', () => {
    const { out, rows } = convert(
      request([
        {
          timeUnixNano: T,
          observedTimeUnixNano: T + 10n,
          severityNumber: SeverityNumber.WARN,
          severityText: 'WARN',
          body: str('disk almost full'),
          attributes: everyType('log'),
          droppedAttributesCount: 2,
          flags: 1,
          traceId: TRACE,
          spanId: SPAN,
          eventName: 'disk.alert',
        },
      ]),
    );
    expect(out).toMatchObject({ accepted: 1, rejected: 0, rejectReason: undefined });
    const log = everyTypeMaps('log');
    const res = everyTypeMaps('res');
    const scope = everyTypeMaps('scope');
    expect(rows).toEqual([
      {
        hour: 490_000,
        time_unix_nano: T.toString(),
        observed_time_unix_nano: (T + 10n).toString(),
        service_name: 'shop',
        severity_text: 'WARN',
        severity_number: 13,
        body: 'disk almost full',
        body_type: 'string',
        trace_id: '0102030405060708090a0b0c0d0e0f10',
        span_id: 'a0a1a2a3a4a5a6a7',
        flags: 1,
        event_name: 'disk.alert',
        scope_name: 'floe-test',
        scope_version: '1.2.3',
        dropped_attributes_count: 2,
        log_attr_str: log.str,
        log_attr_int: log.int,
        log_attr_double: log.double,
        log_attr_bool: log.bool,
        resource_attr_str: { 'service.name': 'shop', ...res.str },
        resource_attr_int: res.int,
        resource_attr_double: res.double,
        resource_attr_bool: res.bool,
        scope_attr_str: scope.str,
        scope_attr_int: scope.int,
        scope_attr_double: scope.double,
        scope_attr_bool: scope.bool,
      },
    ]);
  });

  it.each<[string, object | undefined, string, string]>([
    ['string', str('plain {"not":"parsed"}'), 'plain {"not":"parsed"}', 'string'],
    ['empty string', str(''), '', 'string'],
    ['int', int(-7n), '-7', 'int'],
    ['int64 beyond 2^53', int(9_223_372_036_854_775_807n), '9223372036854775807', 'int'],
    ['double', dbl(3.5), '3.5', 'double'],
    ['double, large', dbl(1e21), '1e+21', 'double'],
    ['NaN', dbl(Number.NaN), 'NaN', 'double'],
    ['bool', bool(false), 'false', 'bool'],
    ['bytes', bytes(Uint8Array.of(0xde, 0xad, 0xbe, 0xef)), '3q2+7w==', 'bytes'],
    ['array', arr(str('a'), int(1n), dbl(1.5), bool(true), bytes(Uint8Array.of(1)), {}), '["a",1,1.5,true,"AQ==",null]', 'array'],
    [
      'kvlist, nested, in order',
      kv({ user: kv({ id: int(12_345_678_901_234_567n), tags: arr(str('x')) }), msg: str('quote " and \\ and \n'), ratio: dbl(Number.NEGATIVE_INFINITY) }),
      '{"user":{"id":12345678901234567,"tags":["x"]},"msg":"quote \\" and \\\\ and \\n","ratio":"-Infinity"}',
      'kvlist',
    ],
    ['no body', undefined, '', 'empty'],
    ['an AnyValue with nothing set', {}, '', 'empty'],
  ])('body: %s', (_name, body, text, type) => {
    const { rows } = convert(request([{ timeUnixNano: T, body: body as AnyValue | undefined }]));
    expect(rows[0]).toMatchObject({ body: text, body_type: type });
  });

  it('a kvlist body is valid JSON that reads back as the value', () => {
    const { rows } = convert(request([{ timeUnixNano: T, body: kv({ a: arr(int(1n), str('b')), c: kv({}) }) }]));
    expect(JSON.parse(rows[0]!.body as string)).toEqual({ a: [1, 'b'], c: {} });
  });

  it.each<[string, bigint, bigint, bigint, bigint | null]>([
    ['time set: it wins', T, T + 99n, T, T + 99n],
    ['time 0: observed time', 0n, T + 99n, T + 99n, T + 99n],
    ['both 0: receive time', 0n, 0n, RECEIVED, null],
  ])('time: %s', (_name, time, observed, want, wantObserved) => {
    const { rows } = convert(request([{ timeUnixNano: time, observedTimeUnixNano: observed, body: str('x') }]));
    expect(rows[0]).toMatchObject({ time_unix_nano: want.toString(), observed_time_unix_nano: wantObserved === null ? null : wantObserved.toString(), hour: Number(want / HOUR) });
  });

  it.each<[string, number, string]>([
    ['unspecified', SeverityNumber.UNSPECIFIED, ''],
    ['trace', SeverityNumber.TRACE, 'trace'],
    ['info', SeverityNumber.INFO, 'Information'],
    ['error4', SeverityNumber.ERROR4, 'ERROR'],
    ['fatal4', SeverityNumber.FATAL4, 'FATAL'],
  ])('severity %s: number and text stored as sent', (_name, number, text) => {
    const { rows } = convert(request([{ timeUnixNano: T, severityNumber: number, severityText: text }]));
    expect(rows[0]).toMatchObject({ severity_number: number, severity_text: text });
  });

  it('ids: absent or all-zero is NULL; a wrong length rejects the record (partial success), the rest is stored', () => {
    const { out, rows } = convert(
      request([
        { timeUnixNano: T, body: str('no ids') },
        { timeUnixNano: T, body: str('zero ids'), traceId: new Uint8Array(16), spanId: new Uint8Array(8) },
        { timeUnixNano: T, body: str('trace only'), traceId: TRACE },
        { timeUnixNano: T, body: str('short trace id'), traceId: new Uint8Array(4).fill(1) },
        { timeUnixNano: T, body: str('long span id'), traceId: TRACE, spanId: new Uint8Array(9).fill(1) },
      ]),
    );
    expect(out).toMatchObject({ accepted: 3, rejected: 2, rejectReason: 'log record has an invalid trace_id (must be empty or 16 bytes)' });
    expect(rows.map((r) => [r.body, r.trace_id, r.span_id])).toEqual([
      ['no ids', null, null],
      ['zero ids', null, null],
      ['trace only', '0102030405060708090a0b0c0d0e0f10', null],
    ]);
  });

  it('a time beyond the int64 range rejects the record', () => {
    const { out } = convert(request([{ timeUnixNano: 0xffff_ffff_ffff_ffffn, body: str('far future') }, { timeUnixNano: T }]));
    expect(out).toMatchObject({ accepted: 1, rejected: 1, rejectReason: 'log record has a time beyond the int64 range of unix nanoseconds' });
  });

  it('groups rows by the hour of their time, with unknown_service when the resource names none', () => {
    const { out, rows } = convert(request([{ timeUnixNano: T }, { timeUnixNano: T + HOUR }, { timeUnixNano: T + 1n }], false));
    expect([...out.byHour.values()].map((b) => [b.hour, b.rows])).toEqual([
      [490_000, 2],
      [490_001, 1],
    ]);
    expect(rows.every((r) => r.service_name === 'unknown_service')).toBe(true);
    expect(rows[0]).toMatchObject({ resource_attr_str: {}, resource_attr_int: {}, severity_text: '', severity_number: 0, event_name: '', flags: 0 });
  });

  it('OTLP/JSON (hex ids, string int64s) and protobuf bodies give the same rows', () => {
    const msg = create(
      ExportLogsServiceRequestSchema,
      request([{ timeUnixNano: T, observedTimeUnixNano: T, severityNumber: SeverityNumber.ERROR, severityText: 'ERROR', body: kv({ n: int(5n) }), attributes: everyType('log'), traceId: TRACE, spanId: SPAN }]),
    );
    const json = toJson(ExportLogsServiceRequestSchema, msg) as { resourceLogs: Array<{ scopeLogs: Array<{ logRecords: Array<Record<string, JsonValue>> }> }> };
    // OTLP/JSON spells ids in hex where proto3 JSON uses base64.
    const rec = json.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!;
    rec.traceId = Buffer.from(TRACE).toString('hex');
    rec.spanId = Buffer.from(SPAN).toString('hex');
    const fromJsonBody = logsToRows(decodeMessage(ExportLogsServiceRequestSchema, Buffer.from(JSON.stringify(json)), 'json'), RECEIVED);
    const fromProto = logsToRows(decodeMessage(ExportLogsServiceRequestSchema, toBinary(ExportLogsServiceRequestSchema, msg), 'protobuf'), RECEIVED);
    expect(fromJsonBody).toEqual(fromProto);
    expect(batchRows([...fromProto.byHour.values()][0]!)[0]).toMatchObject({ trace_id: '0102030405060708090a0b0c0d0e0f10', body: '{"n":5}', body_type: 'kvlist' });
  });
});
