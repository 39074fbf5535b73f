import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { PyroSelectMergeStacktracesRequestSchema, PyroTimeSeriesAggregationType, PyroSelectSeriesRequestSchema, create, toBinary, toJsonString } from '@floe/proto';
import { checkProtocolVersion, codecOf, connectError, deadlineMsOf, decodeMessage, decodedBody, encodeMessage, encodedBody } from './connect-protocol.ts';

/**
 * The Connect unary protocol pieces on their own: codec negotiation, bodies (gzip both ways, the
 * decompressed-size cap), the timeout header, and the one mapping of FloeError kinds onto Connect
 * codes and statuses (reference/api-contracts.md §4.5).
 */

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

const thrown = (f: () => unknown): unknown => {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('did not throw');
};

describe('connectError: FloeError kinds → Connect code and HTTP status', () => {
  it.each<[FloeError, number, string]>([
    [new FloeError('bad_data', 'bad selector'), 400, 'invalid_argument'],
    [new FloeError('unauthorized', 'no credentials'), 401, 'unauthenticated'],
    [new FloeError('forbidden', 'not yours'), 403, 'permission_denied'],
    [new FloeError('not_found', 'gone'), 404, 'not_found'],
    [new FloeError('conflict', 'exists'), 409, 'already_exists'],
    [new FloeError('too_large', 'big'), 429, 'resource_exhausted'],
    [new FloeError('canceled', 'client went away'), 499, 'canceled'],
    [new FloeError('not_implemented', 'nope'), 501, 'unimplemented'],
    [new FloeError('unavailable', 'no querier'), 503, 'unavailable'],
    [new FloeError('timeout', 'slow'), 504, 'deadline_exceeded'],
    [new FloeError('internal', 'broken'), 500, 'internal'],
  ])('%s', (err, status, code) => {
    // A 401 says which credentials it wants, in Connect as everywhere.
    const headers = status === 401 ? { 'WWW-Authenticate': 'Bearer realm="floe"' } : {};
    expect(connectError(err)).toEqual({ status, body: { code, message: err.message }, headers, unexpected: false });
  });

  it('an unknown codec is 415, saying which codecs are taken', () => {
    const out = connectError(thrown(() => codecOf('text/plain')));
    expect(out).toMatchObject({ status: 415, body: { code: 'invalid_argument', message: expect.stringMatching(/unsupported Content-Type "text\/plain"/) } });
    expect(out.headers['accept-post']).toBe('application/proto, application/json');
  });

  it('rate limits keep their Retry-After header', () => {
    const out = connectError(new FloeError('rate_limited', 'tenant acme queries over budget', { retryAfterMs: 1500, headers: { 'Retry-After': '2' } }));
    expect(out).toEqual({ status: 429, body: { code: 'resource_exhausted', message: 'tenant acme queries over budget' }, headers: { 'Retry-After': '2' }, unexpected: false });
  });

  it('anything else is internal with a generic message, flagged for the log', () => {
    expect(connectError(new Error('secret detail'))).toEqual({ status: 500, body: { code: 'internal', message: 'internal server error' }, headers: {}, unexpected: true });
  });

  it("fastify's body limit is resource_exhausted", () => {
    expect(connectError(Object.assign(new Error('too large'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 })).body.code).toBe('resource_exhausted');
  });
});

describe('codec, protocol version and timeout headers', () => {
  it.each([
    ['application/proto', 'proto'],
    ['application/json', 'json'],
    ['Application/JSON; charset=utf-8', 'json'],
  ])('%s → %s', (type, codec) => {
    expect(codecOf(type)).toBe(codec);
  });

  it.each([undefined, '', 'application/grpc', 'application/protobuf', 'application/x-www-form-urlencoded'])('%j is refused', (type) => {
    expect(thrown(() => codecOf(type))).toMatchObject({ kind: 'unsupported_media_type' });
  });

  it('Connect-Protocol-Version must be 1 when sent', () => {
    expect(() => checkProtocolVersion(undefined)).not.toThrow();
    expect(() => checkProtocolVersion('1')).not.toThrow();
    expect(thrown(() => checkProtocolVersion('2'))).toMatchObject({ kind: 'bad_data' });
  });

  it('Connect-Timeout-Ms caps the deadline, never raises it', () => {
    expect(deadlineMsOf(undefined, 30_000)).toBe(30_000);
    expect(deadlineMsOf('5000', 30_000)).toBe(5000);
    expect(deadlineMsOf('60000', 30_000)).toBe(30_000);
    expect(deadlineMsOf('0', 30_000)).toBe(1);
    for (const bad of ['-1', '1.5', 'soon', '12345678901']) expect(thrown(() => deadlineMsOf(bad, 30_000))).toMatchObject({ kind: 'bad_data' });
  });
});

describe('bodies', () => {
  const request = create(PyroSelectSeriesRequestSchema, {
    profileTypeID: CPU,
    labelSelector: '{service_name="api"}',
    start: 1_000n,
    end: 2_000n,
    groupBy: ['service_name'],
    step: 15.5,
    aggregation: PyroTimeSeriesAggregationType.AVERAGE,
    limit: 3n,
  });

  it('decodes binary and proto-JSON (Pyroscope field names, int64 as strings, unknown fields ignored)', () => {
    expect(decodeMessage(PyroSelectSeriesRequestSchema, 'proto', Buffer.from(toBinary(PyroSelectSeriesRequestSchema, request)))).toEqual(request);
    const json = { ...JSON.parse(toJsonString(PyroSelectSeriesRequestSchema, request)), someFutureField: { callSite: [] } };
    expect(json).toMatchObject({ profileTypeID: CPU, labelSelector: '{service_name="api"}', start: '1000', groupBy: ['service_name'], aggregation: 'TIME_SERIES_AGGREGATION_TYPE_AVERAGE', limit: '3' });
    expect(decodeMessage(PyroSelectSeriesRequestSchema, 'json', Buffer.from(JSON.stringify(json)))).toEqual(request);
    expect(decodeMessage(PyroSelectMergeStacktracesRequestSchema, 'json', Buffer.alloc(0)).maxNodes).toBeUndefined();
  });

  it('a body that does not decode is invalid_argument', () => {
    expect(connectError(thrown(() => decodeMessage(PyroSelectSeriesRequestSchema, 'json', Buffer.from('{"start":')))).body.code).toBe('invalid_argument');
    expect(connectError(thrown(() => decodeMessage(PyroSelectSeriesRequestSchema, 'proto', Buffer.from([0x0a, 0xff])))).body.code).toBe('invalid_argument');
  });

  it('encodes in the request codec', () => {
    const out = encodeMessage(PyroSelectMergeStacktracesRequestSchema, 'json', { profileTypeID: CPU, maxNodes: 16n });
    expect(JSON.parse(out.toString())).toEqual({ profileTypeID: CPU, maxNodes: '16' });
    const bin = encodeMessage(PyroSelectMergeStacktracesRequestSchema, 'proto', { profileTypeID: CPU });
    expect(decodeMessage(PyroSelectMergeStacktracesRequestSchema, 'proto', bin).profileTypeID).toBe(CPU);
  });

  it('gunzips a gzip body within the limit; refuses other encodings, bad gzip and bombs', () => {
    const raw = Buffer.from(toBinary(PyroSelectSeriesRequestSchema, request));
    expect(decodedBody(raw, undefined, 1024)).toBe(raw);
    expect(decodedBody(raw, 'identity', 1024)).toBe(raw);
    expect(decodedBody(gzipSync(raw), 'gzip', 1024)).toEqual(raw);
    expect(() => decodedBody(raw, 'br', 1024)).toThrow(expect.objectContaining({ kind: 'not_implemented', code: 'FLOE_ERR_CONNECT_ENCODING' }));
    expect(() => decodedBody(raw, 'gzip', 1024)).toThrow(expect.objectContaining({ kind: 'bad_data', code: 'FLOE_ERR_CONNECT_BODY' }));
    expect(() => decodedBody(gzipSync(Buffer.alloc(4096)), 'gzip', 1024)).toThrow(expect.objectContaining({ kind: 'too_large', code: 'FLOE_ERR_CONNECT_BODY' }));
  });

  it('gzips larger responses for clients accepting gzip', async () => {
    const big = Buffer.alloc(4096, 'a');
    expect((await encodedBody(big, 'gzip')).encoding).toBe('gzip');
    expect((await encodedBody(big, 'deflate, gzip;q=0.5')).encoding).toBe('gzip');
    expect(await encodedBody(big, undefined)).toEqual({ body: big, encoding: undefined });
    expect((await encodedBody(Buffer.from('{}'), 'gzip')).encoding).toBeUndefined();
  });
});
