import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts, startFloe, type FloeUnderTest } from '../src/index.ts';

/**
 * The product-planning API at the router's address (spec 3's base address is {base_url}, the
 * router): `floe all --planning` runs the planning service in the process, and the router forwards
 * its paths there untouched, so requests, credentials, errors and headers are the planning API's
 * own. A router whose planning service is down answers 503 in its envelope.
 */
describe('planning API through the router (embedded, floe all --planning)', () => {
  let floe: FloeUnderTest;
  let key: string;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', planning: true });
    key = (await floe.bootstrap('acme')).api_key;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const call = async (method: string, path: string, o: { key?: string; body?: string; contentType?: string } = {}) => {
    const headers: Record<string, string> = {};
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    if (o.body !== undefined) headers['content-type'] = o.contentType ?? 'application/json';
    const res = await fetch(`${floe.routerUrl}${path}`, { method, headers, body: o.body });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as any) };
  };

  it('creates and reads records at the router, with the planning API own answers', async () => {
    const created = await call('POST', '/api/v1/products', { key, body: JSON.stringify({ product: { name: 'Checkout', reference_prefix: 'CHK' } }) });
    expect(created.status).toBe(201);
    expect(created.body.product).toMatchObject({ name: 'Checkout', reference_prefix: 'CHK' });
    const release = await call('POST', '/api/v1/products/CHK/releases', { key, body: JSON.stringify({ release: { name: 'Q1', release_date: '2027-03-31' } }) });
    expect(release.status).toBe(201);
    expect(release.body.release.reference_num).toBe('CHK-R-1');
    const listed = await call('GET', '/api/v1/releases?page=1&per_page=5', { key });
    expect(listed.status).toBe(200);
    expect(listed.body.releases.map((r: { name: string }) => r.name)).toEqual(['Q1']);
    expect(listed.body.pagination).toMatchObject({ total_records: 1, current_page: 1 });
    expect(listed.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it("errors are the planning API's: no key 401, bad JSON 400, an unknown record 404", async () => {
    const noKey = await call('GET', '/api/v1/features');
    expect(noKey.status).toBe(401);
    expect(noKey.headers.get('www-authenticate')).toBe('Bearer realm="floe"');
    const bad = await call('POST', '/api/v1/products', { key, body: '{"product":' });
    expect(bad.status).toBe(400);
    expect((await call('GET', '/api/v1/features/999999', { key })).status).toBe(404);
    // The router's own API beside it is untouched.
    expect((await call('GET', '/api/v1/tenants', { key: floe.adminApiKey })).status).toBe(200);
  });

  it('forwards only planning paths to the planning service: no absolute-form target, no dot segments', async () => {
    // Sent raw: fetch would resolve the dot segments and refuse the absolute form itself.
    const raw = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const { hostname, port } = new URL(floe.routerUrl);
        const req = httpRequest({ hostname, port, path, method: 'GET', headers: { authorization: `Bearer ${key}` } }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
    expect((await raw('/api/v1/products')).status).toBe(200);
    for (const hostile of ['http://127.0.0.1:9/api/v1/products', '/api/v1/products/../../ready', '/api/v1/features/%2e%2e/%2e%2e/x', '/api/v1/products/..%2f..%2fsecret']) {
      const got = await raw(hostile);
      // Refused by the router in the planning API's body (its `message` too).
      expect({ status: got.status, body: JSON.parse(got.body) }, hostile).toEqual({
        status: 400,
        body: { status: 'error', errorType: 'bad_data', error: 'not a path of the planning API', message: 'not a path of the planning API' },
      });
    }
  });
});

describe('planning API through the router, planning service down', () => {
  let floe: FloeUnderTest;
  beforeAll(async () => {
    const [closed] = await freePorts(1);
    floe = await startFloe({ mode: 'embedded', config: { router: { planning_url: `http://127.0.0.1:${closed}` } } });
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('answers 503 in the envelope', async () => {
    const res = await fetch(`${floe.routerUrl}/api/v1/features`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'error', errorType: 'unavailable' });
  });
});
