import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, UnexpectedAnswer, callApi, optional, shapeProblem, type Shape } from './index.ts';

describe('shapeProblem', () => {
  const USAGE: Shape = { stored_bytes: 'number', max_storage_bytes: optional('number'), tables: [{ table: 'string', retention_ms: optional('number') }] };

  it('passes what has the shape, extra fields and null or absent optionals included', () => {
    expect(shapeProblem({ stored_bytes: 3, tables: [], extra: 'x' }, USAGE)).toBeUndefined();
    expect(shapeProblem({ stored_bytes: 3, max_storage_bytes: null, tables: [{ table: 'logs', retention_ms: 5 }, { table: 'traces', retention_ms: null }] }, USAGE)).toBeUndefined();
    expect(shapeProblem([{}, { a: 1 }], [{}])).toBeUndefined();
    expect(shapeProblem({ a: 0 }, { a: 'any' })).toBeUndefined();
  });

  it.each<[unknown, Shape, string]>([
    [{ tenants: 5 }, { tenants: [{}] }, 'tenants: expected a list, got 5'],
    [{}, { tenants: [{}] }, 'tenants: expected a list, got nothing'],
    [{ tenants: [{}, null] }, { tenants: [{}] }, 'tenants[1]: expected an object, got null'],
    [{ tenants: [[]] }, { tenants: [{}] }, 'tenants[0]: expected an object, got a list'],
    [null, {}, 'expected an object, got null'],
    ['x'.repeat(100), {}, `expected an object, got "${'x'.repeat(39)}…`],
    [{ stored_bytes: '3', tables: [] }, USAGE, 'stored_bytes: expected a number, got "3"'],
    [{ stored_bytes: 3, max_storage_bytes: 'lots', tables: [] }, USAGE, 'max_storage_bytes: expected a number or null, got "lots"'],
    [{ stored_bytes: 3, tables: [{ table: 'logs', retention_ms: {} }] }, USAGE, 'tables[0].retention_ms: expected a number or null, got an object'],
    [{ a: { b: [1, 'two'] } }, { a: { b: ['number'] } }, 'a.b[1]: expected a number, got "two"'],
    [{}, { a: 'any' }, 'a: expected a value, got nothing'],
  ])('%j against its shape: %s', (value, shape, problem) => {
    expect(shapeProblem(value, shape)).toBe(problem);
  });

  it('reads only the answer\'s own fields: a shape naming constructor or __proto__ is not met by Object.prototype', () => {
    expect(shapeProblem({}, JSON.parse('{"constructor": "any"}') as Shape)).toBe('constructor: expected a value, got nothing');
    const protoShape = JSON.parse('{"__proto__": ["number"]}') as Shape;
    expect(shapeProblem({}, protoShape)).toBe('__proto__: expected a list, got nothing');
    expect(shapeProblem(JSON.parse('{"__proto__": [1]}'), protoShape)).toBeUndefined();
  });
});

/**
 * callApi against a server that is not what the caller relies on (another version, a proxy, not
 * Floe at all): a plain HTTP server answering 200 with whatever body the path names.
 */
describe('callApi with an expected shape', () => {
  const BODIES: Record<string, string | undefined> = {
    '/api/v1/tenants-number': '{"tenants":5}',
    '/api/v1/tenants-ok': '{"tenants":[{"id":"a"}]}',
    '/api/v1/null': 'null',
    '/api/v1/string': '"hello"',
    '/api/v1/empty': '',
    '/api/v1/html': '<html></html>',
    '/api/v1/no-content': undefined,
  };
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = new URL(req.url!, 'http://x').pathname;
      const body = BODIES[path];
      if (body === undefined) return void res.writeHead(204).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const refusal = async (path: string, expect?: Shape) => {
    try {
      await callApi({ url }, 'GET', path, { expect });
    } catch (err) {
      return err;
    }
    throw new Error(`${path}: no refusal`);
  };

  it('returns an answer of the expected shape', async () => {
    expect(await callApi({ url }, 'GET', 'api/v1/tenants-ok', { expect: { tenants: [{}] } })).toEqual({ tenants: [{ id: 'a' }] });
  });

  it.each<[string, Shape | undefined, string]>([
    ['api/v1/tenants-number', { tenants: [{}] }, 'tenants: expected a list, got 5'],
    ['api/v1/null', { tenants: [{}] }, 'expected an object or a list, got null'],
    ['api/v1/string', undefined, 'expected an object or a list, got "hello"'],
    ['api/v1/empty', undefined, 'HTTP 200 with an empty body'],
    ['api/v1/html', { tenants: [{}] }, 'HTTP 200 with a body that is not JSON'],
    ['api/v1/no-content', { tenants: [{}] }, 'HTTP 204 with an empty body'],
  ])('refuses %s as an UnexpectedAnswer naming the path', async (path, shape, problem) => {
    const err = await refusal(path, shape);
    expect(err).toBeInstanceOf(UnexpectedAnswer);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ path: `/${path}`, problem, message: `unexpected answer from /${path}: ${problem}` });
  });

  it('still answers a 204 with undefined when no shape is expected (a deletion)', async () => {
    expect(await callApi({ url }, 'DELETE', 'api/v1/no-content')).toBeUndefined();
  });
});
