import { describe, expect, it } from 'vitest';
import { FloeError, toHttp } from '@floe/errors';
import { PromMetricMetadata_MetricType, PromWriteRequestSchema, create, toBinary, type MessageInitShape } from '@floe/proto';
import { decodeRemoteWriteV1, remoteWriteV1BodyToRows, remoteWriteV1ToRows, RemoteWriteMetadata } from './remote-write.ts';
import { readPlainWriteRequest, WireDecodeError, type WireSeries } from './remote-write-wire.ts';
import { batchRows } from './rows.ts';

type V1 = MessageInitShape<typeof PromWriteRequestSchema>;
const MS = 1_795_000_000_123n;
const enc = (init: V1) => toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, init));
const lines = (c: ReturnType<typeof remoteWriteV1ToRows>) => [...c.points.byHour.values()].flatMap((b) => batchRows(b) as unknown[]);

/** Both paths on the same bytes: rows, exemplar rows and counts must be equal. */
function bothPaths(body: Uint8Array) {
  const wire = remoteWriteV1BodyToRows(body, new RemoteWriteMetadata(), 't/d');
  const reference = remoteWriteV1ToRows(decodeRemoteWriteV1(body), new RemoteWriteMetadata(), 't/d');
  return { wire, reference };
}

const REQUEST: V1 = {
  timeseries: [
    {
      labels: [
        { name: '__name__', value: 'http_requests_total' },
        { name: 'job', value: 'api' },
        { name: 'path', value: '/ünï/"q"\\' },
      ],
      samples: [
        { value: 1.5, timestamp: MS },
        { value: Number.NaN, timestamp: MS + 1n },
        { value: -0, timestamp: MS + 2n },
        { value: Number.POSITIVE_INFINITY, timestamp: MS + 3n },
      ],
    },
    { labels: [{ name: '__name__', value: 'queue_depth' }, { name: 'instance', value: 'h:1' }], samples: [{ value: 42, timestamp: MS }] },
    // Conversion errors travel the same way: no name, a negative time, a repeated label.
    { labels: [{ name: 'job', value: 'x' }], samples: [{ value: 1, timestamp: MS }] },
    { labels: [{ name: '__name__', value: 'neg' }], samples: [{ value: 1, timestamp: -5n }] },
    { labels: [{ name: '__name__', value: 'dup' }, { name: 'a', value: '1' }, { name: 'a', value: '2' }], samples: [{ value: 1, timestamp: MS }] },
  ],
  metadata: [{ type: PromMetricMetadata_MetricType.COUNTER, metricFamilyName: 'http_requests', help: 'Requests.', unit: '' }],
};

describe('remote write 1.0 from the wire', () => {
  it('reads series, samples and metadata as protobuf-es does', () => {
    const body = enc(REQUEST);
    const wire = readPlainWriteRequest(body)!;
    const ref = decodeRemoteWriteV1(body);
    expect(wire.timeseries.map((t) => ({ labels: t.labels.map(([name, value]) => ({ name, value })), samples: t.samples }))).toEqual(
      ref.timeseries.map((t) => ({ labels: t.labels.map(({ name, value }) => ({ name, value })), samples: t.samples.map(({ value, timestamp }) => ({ value, timestamp })) })),
    );
    expect(wire.metadata).toEqual(ref.metadata.map(({ type, metricFamilyName, help, unit }) => ({ type, metricFamilyName, help, unit })));
    expect(Object.is(wire.timeseries[0]!.samples[2]!.value, -0)).toBe(true);
    expect(wire.timeseries[3]!.samples[0]!.timestamp).toBe(-5n);
  });

  it('keeps each series\' label fields as sent, joined when samples come between them', () => {
    const labelField = (name: string, value: string) => {
      const msg = Buffer.concat([Buffer.from([0x0a, Buffer.byteLength(name)]), Buffer.from(name), Buffer.from([0x12, Buffer.byteLength(value)]), Buffer.from(value)]);
      return Buffer.concat([Buffer.from([0x0a, msg.length]), msg]);
    };
    const sampleField = Buffer.from([0x12, 0x0b, 0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x10, 0x01]); // value 1, timestamp 1
    const a = labelField('__name__', 'up');
    const b = labelField('job', 'ü');
    const series = (...parts: Buffer[]) => {
      const body = Buffer.concat(parts);
      return Buffer.concat([Buffer.from([0x0a, body.length]), body]);
    };
    const req = readPlainWriteRequest(Buffer.concat([series(a, b, sampleField), series(a, sampleField, b)]))!;
    expect(req.timeseries.map((t) => t.labels)).toEqual([
      [
        ['__name__', 'up'],
        ['job', 'ü'],
      ],
      [
        ['__name__', 'up'],
        ['job', 'ü'],
      ],
    ]);
    const asSent = Buffer.concat([a, b]).toString('hex');
    expect(req.timeseries.map(labelHex)).toEqual([asSent, asSent]);
  });

  it('gives the same rows, counts and errors as the protobuf-es path', () => {
    const { wire, reference } = bothPaths(enc(REQUEST));
    expect(lines(wire)).toEqual(lines(reference));
    expect({ ...wire, points: undefined, exemplars: undefined }).toEqual({ ...reference, points: undefined, exemplars: undefined });
    expect(wire).toMatchObject({ samplesWritten: 5, errors: 3 });
  });

  it('skips unknown fields, and leaves exemplars and native histograms to protobuf-es', () => {
    // Field 15 (varint) and 16 (bytes) appended to the request: unknown, skipped.
    const unknown = Buffer.concat([Buffer.from(enc(REQUEST)), Buffer.from([0x78, 0x05, 0x82, 0x01, 0x02, 0x61, 0x62])]);
    expect(readPlainWriteRequest(unknown)!.timeseries).toHaveLength(5);
    expect(lines(bothPaths(unknown).wire)).toEqual(lines(bothPaths(unknown).reference));
    const withExemplar = enc({
      timeseries: [{ labels: [{ name: '__name__', value: 'x' }], samples: [{ value: 1, timestamp: MS }], exemplars: [{ labels: [{ name: 'trace_id', value: 'ab' }], value: 2, timestamp: MS }] }],
    });
    expect(readPlainWriteRequest(withExemplar)).toBeUndefined();
    const { wire, reference } = bothPaths(withExemplar);
    expect(lines(wire)).toEqual(lines(reference));
    expect(wire.exemplarsWritten).toBe(1);
  });

  it('bytes the wire reader refuses go to protobuf-es, whose answer (rows or bad_data) stands', () => {
    const body = enc(REQUEST);
    const outcome = (f: () => unknown) => {
      try {
        const r = f() as ReturnType<typeof remoteWriteV1ToRows>;
        return { rows: lines(r) };
      } catch (err) {
        return { error: (err as Error).message };
      }
    };
    for (const broken of [body.subarray(0, body.length - 3), Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), Buffer.from([0x0b, 0x00])]) {
      expect(() => readPlainWriteRequest(broken)).toThrow();
      expect(outcome(() => remoteWriteV1BodyToRows(broken))).toEqual(outcome(() => remoteWriteV1ToRows(decodeRemoteWriteV1(broken))));
    }
    expect(() => remoteWriteV1BodyToRows(body.subarray(0, body.length - 3))).toThrow(/not a valid prometheus\.WriteRequest protobuf message/);
  });

  it('reads non-ASCII text, a genuine U+FFFD included, as protobuf-es does', () => {
    const body = enc({
      timeseries: [
        {
          labels: [
            { name: '__name__', value: 'up' },
            { name: 'replacement', value: 'a\uFFFDb' },
            { name: 'bom', value: '\uFEFFlead' },
            { name: 'emoji', value: 'hot 🔥' },
            { name: 'ünï', value: 'çødé' },
          ],
          samples: [{ value: 1, timestamp: MS }],
        },
      ],
      metadata: [{ type: PromMetricMetadata_MetricType.GAUGE, metricFamilyName: 'up', help: 'Up \uFFFD ✓', unit: 'ø' }],
    });
    expect(readPlainWriteRequest(body)!.timeseries[0]!.labels).toEqual(decodeRemoteWriteV1(body).timeseries[0]!.labels.map((l) => [l.name, l.value]));
    const { wire, reference } = bothPaths(body);
    expect(lines(wire)).toEqual(lines(reference));
    expect(wire.samplesWritten).toBe(1);
  });

  it('tags: a padded varint up to 5 bytes is a tag, a longer one is refused, as protobuf-es does', () => {
    const series = Buffer.from(enc({ timeseries: [{ labels: [{ name: '__name__', value: 'up' }], samples: [{ value: 1, timestamp: MS }] }] })).subarray(1);
    const fiveBytes = Buffer.concat([Buffer.from([0x8a, 0x80, 0x80, 0x80, 0x00]), series]);
    const sixBytes = Buffer.concat([Buffer.from([0x8a, 0x80, 0x80, 0x80, 0x80, 0x00]), series]);
    expect(lines(bothPaths(fiveBytes).wire)).toEqual(lines(bothPaths(fiveBytes).reference));
    expect(bothPaths(fiveBytes).wire.samplesWritten).toBe(1);
    expect(() => readPlainWriteRequest(sixBytes)).toThrow(WireDecodeError);
    expect(() => decodeRemoteWriteV1(sixBytes)).toThrow(/not a valid prometheus\.WriteRequest/);
    expect(() => remoteWriteV1BodyToRows(sixBytes)).toThrow(/not a valid prometheus\.WriteRequest/);
  });

  // Proto3 strings must be valid UTF-8: protobuf-es refuses them, so the wire path must not store
  // them with U+FFFD in their place. The request is answered 400, as any undecodable body is.
  it.each([
    ['a label name', { name: 'label name' }],
    ['a label value', { name: 'label value' }],
    ['HELP', { name: 'HELP' }],
    ['a family name', { name: 'family name' }],
  ])('invalid UTF-8 in %s: 400 bad_data on both paths, never mangled rows', (where) => {
    const marker = '\u0001\u0002';
    const init: V1 = {
      timeseries: [
        {
          labels: [
            { name: '__name__', value: 'up' },
            { name: where === 'a label name' ? `job${marker}` : 'job', value: where === 'a label value' ? `api${marker}` : 'api' },
          ],
          samples: [{ value: 1, timestamp: MS }],
        },
      ],
      metadata: [{ type: PromMetricMetadata_MetricType.GAUGE, metricFamilyName: where === 'a family name' ? `up${marker}` : 'up', help: where === 'HELP' ? `Up${marker}.` : 'Up.', unit: '' }],
    };
    const valid = Buffer.from(enc(init));
    const bodies = [
      [0xff, 0xfe], // never valid in UTF-8
      [0xc0, 0x80], // an overlong NUL
      [0xed, 0xa0], // the start of an encoded surrogate (with the next byte, ED A0 xx)
    ].map((bad) => {
      const body = Buffer.from(valid);
      const at = body.indexOf(Buffer.from(marker));
      expect(at).toBeGreaterThan(0);
      body.set(bad, at);
      return body;
    });
    for (const body of bodies) {
      expect(() => readWhole(body)).toThrow(WireDecodeError);
      const failure = (f: () => unknown) => {
        try {
          f();
        } catch (err) {
          return err;
        }
        throw new Error('expected the body to be refused');
      };
      const wire = failure(() => remoteWriteV1BodyToRows(body, new RemoteWriteMetadata(), 't/d'));
      const reference = failure(() => remoteWriteV1ToRows(decodeRemoteWriteV1(body)));
      expect(wire).toBeInstanceOf(FloeError);
      expect(wire).toMatchObject({ kind: 'bad_data', message: expect.stringMatching(/^body is not a valid prometheus\.WriteRequest protobuf message/) });
      expect((wire as Error).message).toBe((reference as Error).message);
      expect(toHttp(wire).status).toBe(400);
    }
  });

  it('a request refused for its labels (read only on a cache miss) leaves no metadata for later requests', () => {
    const marker = '\u0001\u0002';
    const body = Buffer.from(
      enc({
        timeseries: [{ labels: [{ name: '__name__', value: 'refused_total' }, { name: 'job', value: `api${marker}` }], samples: [{ value: 1, timestamp: MS }] }],
        metadata: [{ type: PromMetricMetadata_MetricType.COUNTER, metricFamilyName: 'refused_total', help: 'Refused.', unit: '' }],
      }),
    );
    body.set([0xff, 0xfe], body.indexOf(Buffer.from(marker)));
    expect(readPlainWriteRequest(body)!.timeseries).toHaveLength(1); // framed: the labels are not read yet
    const cache = new RemoteWriteMetadata();
    expect(() => remoteWriteV1BodyToRows(body, cache, 't/d')).toThrow(/not a valid prometheus\.WriteRequest/);
    expect(cache.get('t/d', 'refused_total')).toBeUndefined();
  });

  // Label strings are checked as runs of Label messages and decoded only when asked for; these
  // are the shapes where a valid run does not vouch for each string.
  describe('invalid UTF-8 that a run of labels would hide', () => {
    const lenDelim = (field: number, body: Buffer) => Buffer.concat([Buffer.from([(field << 3) | 2, body.length]), body]);
    const sampleField = lenDelim(2, Buffer.concat([Buffer.from([0x09]), Buffer.alloc(8), Buffer.from([0x10, 0x01])]));
    const nameLabel = lenDelim(1, Buffer.concat([lenDelim(1, Buffer.from('__name__')), lenDelim(2, Buffer.from('up'))]));
    const bodyWith = (label: Buffer) => lenDelim(1, Buffer.concat([nameLabel, lenDelim(1, label), sampleField]));
    const refused = (body: Buffer) => {
      expect(() => readWhole(body)).toThrow(WireDecodeError);
      expect(() => decodeRemoteWriteV1(body)).toThrow(/not a valid prometheus\.WriteRequest/);
      expect(() => remoteWriteV1BodyToRows(body)).toThrow(/not a valid prometheus\.WriteRequest/);
    };

    it('a value cut inside a character, followed by an unknown field whose tag completes it', () => {
      // 'ap' + C3 | tag of field 16, varint (80 01) | 00: C3 80 is a valid character across the boundary.
      const label = Buffer.concat([lenDelim(1, Buffer.from('job')), lenDelim(2, Buffer.from([0x61, 0x70, 0xc3])), Buffer.from([0x80, 0x01, 0x00])]);
      expect(Buffer.from([0xc3, 0x80]).toString('utf8')).toBe('\u00c0');
      refused(bodyWith(label));
    });

    it('an invalid first occurrence of a repeated label field', () => {
      refused(bodyWith(Buffer.concat([lenDelim(1, Buffer.from([0xff, 0xfe])), lenDelim(1, Buffer.from('job')), lenDelim(2, Buffer.from('api'))])));
    });

    it('the same label bytes read again give the same labels (the cache key), decoded when asked for', () => {
      const body = bodyWith(Buffer.concat([lenDelim(1, Buffer.from('job')), lenDelim(2, Buffer.from('çødé'))]));
      const [a, b] = [readPlainWriteRequest(body)!.timeseries[0]!, readPlainWriteRequest(body)!.timeseries[0]!];
      expect(labelHex(a)).toBe(labelHex(b));
      expect(a.name).toBe('up');
      expect(a.labels).toEqual([['__name__', 'up'], ['job', 'çødé']]);
      expect(lines(bothPaths(body).wire)).toEqual(lines(bothPaths(body).reference));
    });
  });
});

/** A series' label bytes (its cache key) as hex. */
function labelHex(s: WireSeries): string {
  return s.labelData.toString('hex', s.labelFrom, s.labelTo);
}

/** The request as the wire reader reads it, each series' labels included (they are read lazily). */
function readWhole(body: Uint8Array): void {
  for (const t of readPlainWriteRequest(body)?.timeseries ?? []) void t.labels;
}
