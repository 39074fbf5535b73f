import { describe, expect, it } from 'vitest';
import {
  create,
  fromBinary,
  ExportProfilesServiceRequestSchema,
  FlightDataSchema,
  ProfileSampleSchema,
  PromWriteRequestSchema,
  RwV2RequestSchema,
  TempoTraceByIDResponseSchema,
  TempoTraceSchema,
  toBinary,
  TracesDataSchema,
} from './index.ts';

// Spot checks of the field numbers other implementations rely on, read straight off the wire.
describe('wire layout', () => {
  const traces = create(TracesDataSchema, {
    resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: new Uint8Array(16).fill(1), spanId: new Uint8Array(8).fill(2), name: 's' }] }] }],
  });

  it('tempopb.Trace is byte-compatible with OTLP TracesData', () => {
    const bytes = toBinary(TracesDataSchema, traces);
    const tempo = fromBinary(TempoTraceSchema, bytes);
    expect(tempo.resourceSpans[0]?.scopeSpans[0]?.spans[0]?.name).toBe('s');
    expect(toBinary(TempoTraceSchema, tempo)).toEqual(bytes);
    const response = fromBinary(TempoTraceByIDResponseSchema, toBinary(TempoTraceByIDResponseSchema, create(TempoTraceByIDResponseSchema, { trace: tempo, status: 1 })));
    expect(response.status).toBe(1);
  });

  it('remote write v2 reserves v1 fields, so a v1 body decodes as an empty v2 request', () => {
    const v1 = toBinary(
      PromWriteRequestSchema,
      create(PromWriteRequestSchema, { timeseries: [{ labels: [{ name: '__name__', value: 'up' }], samples: [{ value: 1, timestamp: 5n }] }] }),
    );
    const v2 = fromBinary(RwV2RequestSchema, v1);
    expect(v2.symbols).toEqual([]);
    expect(v2.timeseries).toEqual([]);
  });

  it('remote write v2 still reads the legacy TimeSeries.created_timestamp (field 6)', () => {
    // field 5 (timeseries, LEN) containing field 6 (varint 1234)
    const inner = [0x30, 0xd2, 0x09];
    const bytes = Uint8Array.from([0x2a, inner.length, ...inner]);
    expect(fromBinary(RwV2RequestSchema, bytes).timeseries[0]?.createdTimestamp).toBe(1234n);
  });

  it('profiles Sample uses the v1.10 numbering (values = 4)', () => {
    const bytes = toBinary(ProfileSampleSchema, create(ProfileSampleSchema, { values: [7n] }));
    expect(Array.from(bytes)).toEqual([0x22, 0x01, 0x07]);
    const request = create(ExportProfilesServiceRequestSchema, { dictionary: { stringTable: ['', 'cpu'] } });
    expect(fromBinary(ExportProfilesServiceRequestSchema, toBinary(ExportProfilesServiceRequestSchema, request)).dictionary?.stringTable).toEqual(['', 'cpu']);
  });

  it('FlightData keeps data_body at field 1000', () => {
    const bytes = toBinary(FlightDataSchema, create(FlightDataSchema, { dataBody: Uint8Array.of(9) }));
    // tag = (1000 << 3) | 2 = 8002 = varint c2 3e
    expect(Array.from(bytes)).toEqual([0xc2, 0x3e, 0x01, 0x09]);
  });
});
