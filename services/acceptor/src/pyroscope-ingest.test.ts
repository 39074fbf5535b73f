import { describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { create, JfrLabelsSnapshotSchema, toBinary, type PprofProfile } from '@floe/proto';
import { craftedRecording, str, v } from './jfr/crafted.test-support.ts';
import { ingestFormat, legacyIngestSeries, parseIngestName, parseIngestTime } from './pyroscope-ingest.ts';

const NOW = 1_700_000_000_000_000_000n;

describe('Pyroscope /ingest names, times and formats', () => {
  it('splits the name into service, kind and labels', () => {
    expect(parseIngestName('my.awesome.app.cpu{env=staging, region=us-west-1}', undefined)).toEqual({
      service: 'my.awesome.app',
      kind: expect.objectContaining({ name: 'process_cpu', type: 'cpu', unit: 'nanoseconds' }),
      labels: [
        { name: 'env', value: 'staging' },
        { name: 'region', value: 'us-west-1' },
      ],
    });
    expect(parseIngestName('svc.inuse_space', undefined).kind).toMatchObject({ name: 'memory', type: 'inuse_space', unit: 'bytes' });
    expect(parseIngestName('svc.lock_duration', undefined).kind).toMatchObject({ name: 'mutex', type: 'delay', unit: 'nanoseconds' });
    // No known kind: the whole name is the service, and the units say what the values are.
    expect(parseIngestName('my.app', 'objects')).toMatchObject({ service: 'my.app', kind: { name: 'memory', type: 'alloc_objects' } });
    expect(parseIngestName('my.app', undefined)).toMatchObject({ service: 'my.app', kind: { name: 'process_cpu' } });
    // A label may not rename the service.
    expect(parseIngestName('a.cpu{service_name=b,__name__=c,x=1}', undefined).labels).toEqual([{ name: 'x', value: '1' }]);
    expect(() => parseIngestName('a.cpu{env=prod', undefined)).toThrow(/labels must end with \}/);
    expect(() => parseIngestName('.cpu', undefined)).toThrow(/no application name/);
    expect(() => parseIngestName('app', 'furlongs')).toThrow(/units "furlongs" is not one of/);
  });

  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])("an app or units named like Object's own %s is no profile kind (it was one, whose type was undefined)", (word) => {
    expect(parseIngestName(`my.app.${word}`, undefined)).toMatchObject({ service: `my.app.${word}`, kind: { name: 'process_cpu', type: 'cpu' } });
    expect(() => parseIngestName('my.app', word)).toThrow(`units ${JSON.stringify(word)} is not one of`);
    expect(() => ingestFormat(word, undefined)).toThrow(`format ${JSON.stringify(word)} is not one of folded, lines, pprof, jfr`);
  });

  it('reads seconds, milliseconds and nanoseconds by size; absent is now', () => {
    expect(parseIngestTime('from', '1700000000', NOW)).toBe(1_700_000_000_000_000_000n);
    expect(parseIngestTime('from', '1700000000123', NOW)).toBe(1_700_000_000_123_000_000n);
    expect(parseIngestTime('from', '1700000000123456789', NOW)).toBe(1_700_000_000_123_456_789n);
    expect(parseIngestTime('from', undefined, NOW)).toBe(NOW);
    expect(() => parseIngestTime('until', '-5', NOW)).toThrow(/until "-5" is not a unix time/);
  });

  it('tells the format from the parameter, else from the content type', () => {
    expect(ingestFormat(undefined, 'text/plain')).toBe('folded');
    expect(ingestFormat('collapsed', undefined)).toBe('folded');
    expect(ingestFormat(undefined, 'multipart/form-data; boundary=x')).toBe('pprof');
    expect(ingestFormat('LINES', undefined)).toBe('lines');
    expect(() => ingestFormat('trie', undefined)).toThrow(/trie format is not taken/);
    expect(() => ingestFormat('png', undefined)).toThrow(/format "png" is not one of folded, lines, pprof, jfr/);
    expect(ingestFormat('jfr', 'multipart/form-data; boundary=x')).toBe('jfr');
  });

  it('sums repeated folded stacks, skips blank lines and zero counts, takes CRLF, and stores stacks leaf first', async () => {
    const [series, ...more] = await legacyIngestSeries(
      { query: { name: 'app.cpu', from: '1700000000', until: '1700000010', sampleRate: '50' }, contentType: undefined, body: Buffer.from('a;b 2\r\n\na;b 3\r\na 0\na;c 1\n'), maxDecompressedBytes: 1 << 20 },
      NOW,
    );
    expect(more).toEqual([]);
    if (!series) throw new Error('no series');
    expect(series.labels).toEqual([
      { name: '__name__', value: 'process_cpu' },
      { name: 'service_name', value: 'app' },
    ]);
    expect(series.window).toEqual({ timeNs: 1_700_000_000_000_000_000n, durationNs: 10_000_000_000n });
    const p = series.profiles[0] as PprofProfile;
    const name = (locationId: bigint) => p.stringTable[Number(p.function.find((f) => f.id === p.location.find((l) => l.id === locationId)!.line[0]!.functionId)!.name)];
    // 50 Hz: a tick is 20 ms.
    expect(p.period).toBe(20_000_000n);
    expect(p.sample.map((s) => [s.locationId.map(name).join(','), s.value])).toEqual([
      ['b,a', [100_000_000n]],
      ['c,a', [20_000_000n]],
    ]);
    expect([p.stringTable[Number(p.sampleType[0]!.type)], p.stringTable[Number(p.sampleType[0]!.unit)]]).toEqual(['cpu', 'nanoseconds']);
  });

  it('refuses a window that ends before it starts and a sample rate that is no rate', async () => {
    const body = Buffer.from('a 1');
    await expect(legacyIngestSeries({ query: { name: 'app', from: '20', until: '10' }, contentType: undefined, body, maxDecompressedBytes: 1 << 20 }, NOW)).rejects.toThrow(/from \(20\) is after until \(10\)/);
    await expect(legacyIngestSeries({ query: { name: 'app', sampleRate: '0' }, contentType: undefined, body, maxDecompressedBytes: 1 << 20 }, NOW)).rejects.toThrow(/sampleRate "0"/);
    // A rate so small its period (ns) would not fit an int64 was a 500.
    await expect(legacyIngestSeries({ query: { name: 'app', sampleRate: '1e-300' }, contentType: undefined, body, maxDecompressedBytes: 1 << 20 }, NOW)).rejects.toThrow(
      expect.objectContaining({ kind: 'bad_data', message: expect.stringMatching(/sampleRate "1e-300" is not a rate in Hz between 1e-9 and 1e9/) }),
    );
  });

  it("splits a JFR recording's samples by the dynamic labels of their contexts; span and profile ids stay on the samples", async () => {
    const classes = [
      { id: '1', name: 'long' },
      { id: '2', name: 'java.lang.String' },
      { id: '3', name: 'jdk.types.Symbol', fields: [{ name: 'string', type: '2' }] },
      { id: '4', name: 'java.lang.Class', fields: [{ name: 'name', type: '3', constantPool: true }] },
      { id: '5', name: 'jdk.types.Method', fields: [{ name: 'type', type: '4', constantPool: true }, { name: 'name', type: '3', constantPool: true }] },
      { id: '6', name: 'jdk.types.StackFrame', fields: [{ name: 'method', type: '5', constantPool: true }] },
      { id: '7', name: 'jdk.types.StackTrace', fields: [{ name: 'frames', type: '6', array: true }] },
      { id: '8', name: 'jdk.ExecutionSample', fields: [{ name: 'startTime', type: '1' }, { name: 'stackTrace', type: '7', constantPool: true }, { name: 'contextId', type: '1' }, { name: 'spanId', type: '1' }, { name: 'spanName', type: '1' }] },
    ];
    const pools = [
      { classId: 3, constants: [{ id: 1, value: str('Shop') }, { id: 2, value: str('checkout') }] },
      { classId: 4, constants: [{ id: 1, value: v(1) }] },
      { classId: 5, constants: [{ id: 1, value: [...v(1), ...v(2)] }] },
      { classId: 7, constants: [{ id: 1, value: [...v(1), ...v(1)] }] },
    ];
    const sample = (context: number, span = 0, name = 0) => [...v(8), ...v(5), ...v(1), ...v(context), ...v(span), ...v(name)];
    // The last sample names its span (id 0xef, name string 9) as the OpenTelemetry integration does.
    const recording = craftedRecording(classes, pools, [sample(0), sample(7), sample(7), sample(9), sample(11), sample(9, 0xef, 9)]);
    // Strings 1..5: endpoint, /checkout, span_id, two span ids, /cart; context 12 names a string that is not there.
    const snapshot = create(JfrLabelsSnapshotSchema, {
      strings: { '1': 'endpoint', '2': '/checkout', '3': 'span_id', '4': '00000000000000ab', '5': '00000000000000cd', '6': '/cart', '7': 'service_name', '8': 'evil', '9': 'GET /cart' },
      contexts: {
        '7': { labels: { '1': 2n, '3': 4n } },
        '9': { labels: { '1': 6n, '7': 8n } },
        '11': { labels: { '1': 2n, '3': 5n } },
        '12': { labels: { '99': 2n } },
      },
    });
    const form = new FormData();
    form.set('jfr', new Blob([gzipSync(recording)]), 'jfr');
    form.set('labels', new Blob([gzipSync(toBinary(JfrLabelsSnapshotSchema, snapshot))]), 'labels');
    const request = new Response(form);
    const body = Buffer.from(await request.arrayBuffer());
    const series = await legacyIngestSeries(
      { query: { name: 'shop', from: '1700000000', until: '1700000010', format: 'jfr' }, contentType: request.headers.get('content-type')!, body, maxDecompressedBytes: 1 << 20 },
      NOW,
    );
    const base = [
      { name: '__name__', value: 'process_cpu' },
      { name: 'service_name', value: 'shop' },
    ];
    const samples = (p: PprofProfile) => p.sample.map((x) => ({ value: x.value[0], labels: x.label.map((l) => `${p.stringTable[Number(l.key)]}=${p.stringTable[Number(l.str)]}`) }));
    expect(series.map((s) => ({ labels: s.labels, samples: samples(s.profiles[0] as PprofProfile) }))).toEqual([
      { labels: base, samples: [{ value: 10_000_000n, labels: [] }] },
      {
        labels: [...base, { name: 'endpoint', value: '/checkout' }],
        samples: [
          { value: 20_000_000n, labels: ['span_id=00000000000000ab'] },
          { value: 10_000_000n, labels: ['span_id=00000000000000cd'] },
        ],
      },
      // A context label never replaces the upload's own (service_name stays "shop").
      { labels: [...base, { name: 'endpoint', value: '/cart' }], samples: [{ value: 10_000_000n, labels: [] }] },
      { labels: [...base, { name: 'endpoint', value: '/cart' }, { name: 'span_name', value: 'GET /cart' }], samples: [{ value: 10_000_000n, labels: ['span_id=00000000000000ef'] }] },
    ]);
    const broken = new FormData();
    broken.set('jfr', new Blob([recording]), 'jfr');
    broken.set('labels', new Blob([Buffer.from([0x0a, 0xff, 0xff])]), 'labels');
    const bad = new Response(broken);
    await expect(
      legacyIngestSeries({ query: { name: 'shop', format: 'jfr' }, contentType: bad.headers.get('content-type')!, body: Buffer.from(await bad.arrayBuffer()), maxDecompressedBytes: 1 << 20 }, NOW),
    ).rejects.toThrow(/the labels part is not a LabelsSnapshot/);
  });
});
