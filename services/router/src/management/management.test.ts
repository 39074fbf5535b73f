import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authDepsFromDb, managementAuthDepsFromDb } from '@floe/auth';
import { migrate, openDb, type Db } from '@floe/meta';
import { createLogger } from '@floe/telemetry';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFloeCatalog } from '@floe/iceberg';
import { createObjectStore } from '@floe/storage';
import { buildApp } from '../app.ts';
import { createTenantTables, provisionOnCreate, type TenantTables } from './tenant-tables.ts';
import { DOCUMENTED_PREFIXES, type OpenApiDocument } from '../openapi.ts';

/**
 * Route contracts of the management and session APIs through inject() on an in-memory PGlite:
 * the OpenAPI document against the router's own route table, cookie attributes by public URL,
 * and the provisioning hook. End-to-end rules (both modes, real processes) are in
 * packages/testkit/test/management.e2e.test.ts.
 */
type App = Awaited<ReturnType<typeof buildApp>>;
const ADMIN = 'admin-key-for-tests';

async function makeApp(db: Db, extra: { publicUrl?: string; provisionDataset?: (t: string, d: string) => Promise<unknown>; tables?: TenantTables } = {}): Promise<App> {
  const auth = authDepsFromDb(db, { adminApiKey: ADMIN, ttlMs: 1000 });
  return buildApp({
    log: createLogger({ level: 'silent' }),
    auth,
    managementAuth: managementAuthDepsFromDb(db, auth),
    // The management API never calls a querier.
    querier: {} as never,
    queryTimeoutMs: 1000,
    maxBodyBytes: 1024 * 1024,
    isReady: () => true,
    db,
    adminKeys: () => [ADMIN],
    publicUrl: extra.publicUrl ?? 'http://localhost:3000',
    sessionTtlMs: 3_600_000,
    provisionDataset: extra.provisionDataset,
    tables: extra.tables,
  });
}

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

  it('documents exactly the /api/v1 and /ui/session routes the router serves', () => {
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

  it('documents the error envelope on every operation and resolves every $ref', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const responses = (op as { responses: Record<string, { content?: { 'application/json': { schema: unknown } } }> }).responses;
        expect(responses['4XX']?.content?.['application/json'].schema, `${method} ${path}`).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
      }
    }
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
    for (const r of refs) {
      expect(r).toMatch(/^#\/components\/schemas\//);
      expect(doc.components.schemas).toHaveProperty(r.slice('#/components/schemas/'.length));
    }
    expect(JSON.stringify(doc)).not.toContain('"$id"');
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
    const tables = createTenantTables(openFloeCatalog(db, store), { traces_enabled: true, logs_enabled: true, metrics_enabled: true, profiles_enabled: true, custom_schemas: [] }, createLogger({ level: 'silent' }));
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
