import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, openDb, type Db } from '@floe/meta';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createObjectStore } from '@floe/storage';
import { provisionOnCreate } from './tenant-tables.ts';
import { ADMIN, makeApp, makeTenantTables, type App } from './test-support.ts';
import { DOCUMENTED_PREFIXES, type OpenApiDocument } from '../openapi.ts';

/**
 * Route contracts of the management and session APIs through inject() on an in-memory PGlite:
 * the OpenAPI document against the router's own route table (the query APIs' routes included),
 * cookie attributes by public URL, and the provisioning hook. End-to-end rules (both modes, real processes) are in
 * packages/testkit/test/management.e2e.test.ts.
 */
const CONNECT_PATH = '/profilequery/querier.v1.QuerierService/';

/** Every (METHOD, path) of fastify's route tree, from printRoutes, without HEAD twins. */
function routeTable(app: App): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    const path = stack.join('').replace(/\/:([a-z_]+)/g, '/{$1}').replace(/(.)\/$/, '$1');
    for (const method of (m[3] ?? '').split(', ').filter((x) => x && x !== 'HEAD')) out.push([method, path]);
  }
  return out;
}

describe('management API route contracts', () => {
  let db: Db;
  let app: App;
  let doc: OpenApiDocument;

  beforeAll(async () => {
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    app = await makeApp(db);
    const res = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    doc = res.json() as OpenApiDocument;
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  it('documents exactly the /api/v1, /ui/session and query API routes the router serves', () => {
    const served = routeTable(app)
      .filter(([, path]) => DOCUMENTED_PREFIXES.some((p) => path.startsWith(p)))
      .map(([m, p]) => `${m} ${p}`);
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(new Set(documented)).toEqual(new Set(served));
    expect(documented).toHaveLength(new Set(documented).size);
    expect(served.length).toBeGreaterThanOrEqual(26);
  });

  it('names every operation <verb>_<resource>, once', () => {
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => (op as { operationId?: string }).operationId));
    expect(ids.every((id) => typeof id === 'string' && /^[a-z]+(?:_[a-z]+)+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(['list_tenants', 'create_tenant', 'get_tenant', 'update_tenant', 'delete_tenant', 'create_dataset', 'create_api_key', 'get_openapi']));
  });

  it('documents the error envelope on every operation (Connect’s error on the Connect API) and resolves every $ref', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const responses = (op as { responses: Record<string, { content?: { 'application/json': { schema: { required?: string[] } } } }> }).responses;
        for (const range of ['4XX', '5XX']) {
          const schema = responses[range]?.content?.['application/json'].schema;
          // Pyroscope's Connect API answers Connect's own error, as Grafana's client expects.
          if (path.startsWith(CONNECT_PATH)) expect(schema?.required, `${method} ${path}`).toEqual(['code', 'message']);
          else expect(schema, `${method} ${path} ${range}`).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
        }
      }
    }
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
    for (const r of refs) {
      expect(r).toMatch(/^#\/components\/schemas\//);
      expect(doc.components.schemas).toHaveProperty(r.slice('#/components/schemas/'.length));
    }
    expect(JSON.stringify(doc)).not.toContain('"$id"');
  });

  it('documents every query API route, tagged by signal, with the spec’s operation ids', () => {
    const queryPrefixes = ['/logquery/', '/metricquery/', '/tracequery/', '/profilequery/', '/api/profiles/'];
    const served = routeTable(app).filter(([, path]) => queryPrefixes.some((p) => path.startsWith(p)));
    expect(served.length).toBeGreaterThanOrEqual(90);
    const tags: Record<string, string> = { logquery: 'logs', metricquery: 'metrics', tracequery: 'traces', profilequery: 'profiles', api: 'profiles' };
    for (const [method, path] of served) {
      const op = doc.paths[path]?.[method.toLowerCase()] as { operationId?: string; summary?: string; tags?: string[]; responses: Record<string, unknown> } | undefined;
      expect(op, `${method} ${path}`).toBeDefined();
      expect(op!.operationId).toMatch(/^[a-z]+(?:_[a-z]+)+$/);
      expect(op!.summary).toBeTruthy();
      expect(op!.tags).toEqual([tags[path.split('/')[1]!]]);
    }
    const idOf = (method: string, path: string) => (doc.paths[path]?.[method] as { operationId?: string } | undefined)?.operationId;
    expect(
      Object.fromEntries(
        [
          ['get', '/metricquery/api/v1/query'],
          ['get', '/logquery/api/v1/query'],
          ['get', '/profilequery/render'],
          ['get', '/profilequery/render-diff'],
          ['get', '/profilequery/profile-types'],
          ['get', '/profilequery/label-names'],
          ['get', '/profilequery/label-values'],
          ['get', '/api/profiles/trace/{trace_id}'],
        ].map(([m, p]) => [`${m} ${p}`, idOf(m!, p!)]),
      ),
    ).toEqual({
      'get /metricquery/api/v1/query': 'promql_query',
      'get /logquery/api/v1/query': 'logql_query',
      'get /profilequery/render': 'pyroscope_render',
      'get /profilequery/render-diff': 'pyroscope_render_diff',
      'get /profilequery/profile-types': 'pyroscope_profile_types',
      'get /profilequery/label-names': 'pyroscope_label_names',
      'get /profilequery/label-values': 'pyroscope_label_values',
      'get /api/profiles/trace/{trace_id}': 'profiles_by_trace',
    });
    // The form POST twin of a query route and Grafana's /loki/api/v1 path have ids of their own.
    expect(idOf('post', '/metricquery/api/v1/query')).toBe('post_promql_query');
    expect(idOf('get', '/logquery/loki/api/v1/query')).toBe('loki_logql_query');
    // Query parameters and path parameters are documented although fastify validates none of them.
    const range = doc.paths['/metricquery/api/v1/query_range']!['get'] as { parameters: Array<{ name: string; in: string; required: boolean }> };
    expect(range.parameters.filter((p) => p.in === 'query' && p.required).map((p) => p.name)).toEqual(['query', 'start', 'end', 'step']);
    const trace = doc.paths['/tracequery/api/traces/{trace_id}']!['get'] as { parameters: Array<{ name: string; in: string }>; responses: { 200: { content: object } } };
    expect(trace.parameters).toContainEqual(expect.objectContaining({ name: 'trace_id', in: 'path', required: true }));
    expect(Object.keys(trace.responses[200].content)).toEqual(['application/json', 'application/protobuf']);
  });

  it('leaves the query APIs’ own parameter parsing and errors alone', async () => {
    // A documentation-only schema: no fastify validation in front of the routes' own parsers.
    const headers = { authorization: `Bearer ${ADMIN}`, 'x-tenant-id': 'acme' };
    const cases: Array<[string, string, RegExp]> = [
      ['GET', '/logquery/api/v1/labels?start=soon&extra=1', /^invalid start: cannot parse "soon"/],
      ['GET', '/metricquery/api/v1/query_range?query=up', /^invalid parameter "start": parameter is required$/],
      ['GET', '/tracequery/api/traces/not-hex', /^invalid trace id "not-hex"/],
      ['GET', '/api/profiles/trace/abc?limit=0', /^invalid limit "0"/],
      ['GET', '/profilequery/label-values', /^missing label parameter/],
    ];
    for (const [method, url, message] of cases) {
      const res = await app.inject({ method: method as 'GET', url, headers });
      expect(res.statusCode, url).toBe(400);
      expect(res.json(), url).toEqual({ status: 'error', errorType: 'bad_data', error: expect.stringMatching(message) });
    }
    const form = await app.inject({ method: 'POST', url: '/metricquery/api/v1/format_query', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'query=sum(up)by(job)' });
    expect(form.statusCode).toBe(200);
    expect(form.json()).toEqual({ status: 'success', data: 'sum by (job) (up)' });
  });

  it('validates request bodies against the documented schema, answering 400 in the envelope', async () => {
    const body = (doc.paths['/api/v1/tenants']!['post'] as { requestBody: { content: { 'application/json': { schema: { additionalProperties: boolean; required: string[] } } } } }).requestBody.content['application/json'].schema;
    expect(body.additionalProperties).toBe(false);
    expect(body.required).toEqual(['id']);
    const cases: Array<[unknown, RegExp]> = [
      [{}, /body must have required property 'id'/],
      [{ id: 'acme', color: 'red' }, /body must NOT have additional properties: "color"/],
      [{ id: 42 }, /body\.id must be string/],
      [{ id: 'Not Valid' }, /body\.id must match pattern/],
      [{ id: 'acme', settings: [] }, /body\.settings must be object/],
    ];
    for (const [payload, message] of cases) {
      const res = await app.inject({ method: 'POST', url: '/api/v1/tenants', headers: { authorization: `Bearer ${ADMIN}` }, payload: payload as object });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ status: 'error', errorType: 'bad_data', error: expect.stringMatching(message) });
    }
    // No coercion: a string is not a boolean.
    await app.inject({ method: 'POST', url: '/api/v1/tenants', headers: { authorization: `Bearer ${ADMIN}` }, payload: { id: 'coerce' } });
    const res = await app.inject({ method: 'PATCH', url: '/api/v1/tenants/coerce', headers: { authorization: `Bearer ${ADMIN}` }, payload: { disabled: 'true' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ status: 'error', errorType: 'bad_data', error: 'body.disabled must be boolean' });
  });

  it.each([
    ['http://floe.example:3000', false],
    ['https://floe.example', true],
  ])('sets the session cookie for public URL %s (Secure: %s)', async (publicUrl, secure) => {
    const a = await makeApp(db, { publicUrl });
    try {
      const create = await a.inject({ method: 'POST', url: '/api/v1/users', headers: { authorization: `Bearer ${ADMIN}` }, payload: { email: `c-${secure}@example.com`, password: 'pa55word!' } });
      expect(create.statusCode).toBe(201);
      const res = await a.inject({ method: 'POST', url: '/ui/session', payload: { username: `c-${secure}@example.com`, password: 'pa55word!' } });
      expect(res.statusCode).toBe(200);
      const cookie = String(res.headers['set-cookie']);
      const attrs = cookie.split('; ');
      expect(attrs[0]).toMatch(/^floe_session=[A-Za-z0-9_-]{43}$/);
      expect(attrs).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Lax', 'Path=/', 'Max-Age=3600']));
      expect(attrs.includes('Secure')).toBe(secure);
      const out = await a.inject({ method: 'DELETE', url: '/ui/session', headers: { cookie: attrs[0]! } });
      expect(out.statusCode).toBe(204);
      expect(String(out.headers['set-cookie'])).toBe(`floe_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`);
    } finally {
      await a.close();
    }
  });

  it('creates the dataset (201) when the provisioning hook fails, after calling it', async () => {
    const calls: string[] = [];
    const a = await makeApp(db, {
      provisionDataset: async (t, d) => {
        calls.push(`${t}/${d}`);
        throw new Error('catalog down');
      },
    });
    try {
      const admin = { authorization: `Bearer ${ADMIN}` };
      expect((await a.inject({ method: 'POST', url: '/api/v1/tenants', headers: admin, payload: { id: 'prov' } })).statusCode).toBe(201);
      const res = await a.inject({ method: 'POST', url: '/api/v1/tenants/prov/datasets', headers: admin, payload: { id: 'edge' } });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ tenant_id: 'prov', id: 'edge', is_default: false });
      expect(calls).toEqual(['prov/default', 'prov/edge']);
      const { rows } = await db.query('SELECT id FROM datasets WHERE tenant_id = $1 ORDER BY id', ['prov']);
      expect(rows).toEqual([{ id: 'default' }, { id: 'edge' }]);
    } finally {
      await a.close();
    }
  });

  it('tables/create answers 500 in the envelope when a table cannot be created; dataset creation still 201', async () => {
    // A real catalog over a store that cannot write (its root is a regular file).
    const dir = mkdtempSync(join(tmpdir(), 'floe-broken-store-'));
    writeFileSync(join(dir, 'root'), 'not a directory');
    const store = createObjectStore({ kind: 'fs', root: join(dir, 'root') });
    const tables = makeTenantTables(db, store);
    const a = await makeApp(db, { tables, provisionDataset: provisionOnCreate(tables, db) });
    try {
      const admin = { authorization: `Bearer ${ADMIN}` };
      expect((await a.inject({ method: 'POST', url: '/api/v1/tenants', headers: admin, payload: { id: 'broken' } })).statusCode).toBe(201);
      expect((await a.inject({ method: 'POST', url: '/api/v1/tenants/broken/datasets', headers: admin, payload: { id: 'edge' } })).statusCode).toBe(201);
      const made = await a.inject({ method: 'POST', url: '/api/v1/tenants/broken/tables/create', headers: admin });
      expect(made.statusCode).toBe(500);
      expect(made.json()).toEqual({ status: 'error', errorType: 'internal', error: expect.stringMatching(/^could not create tables: default\.traces, .*edge\.traces/) });
      const listed = await a.inject({ method: 'GET', url: '/api/v1/tenants/broken/tables', headers: admin });
      expect(listed.statusCode).toBe(200);
      expect(listed.json()).toEqual({ tables: [], datasets: [{ dataset: 'default', tables: [] }, { dataset: 'edge', tables: [] }] });
    } finally {
      await a.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
