import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@floe/config';
import { bootstrapTenant, createApiKey, createUser, deleteTenant, grantMembership, type Db } from '@floe/meta';
import type { ServiceHandle } from '@floe/runtime';
import { silentLogger, startSelfMonitoring } from '@floe/telemetry';
import { start } from '../src/index.ts';
import { migratedDatabase, type Backend } from './test-database.ts';

/**
 * The planning API end to end (spec 3): a real server on an ephemeral port over a real metadata
 * DB (PGlite and PostgreSQL), walked the way an integration would use it.
 */

// Response bodies are checked field by field against the spec, so they are read untyped.
type Json = any;

interface Call {
  key?: string;
  basic?: [string, string];
  tenant?: string;
  body?: unknown;
  raw?: string;
  contentType?: string;
}

const MAX_BODY = 64 * 1024;

const config = (overrides: Record<string, unknown> = {}) =>
  loadConfig({
    env: {},
    overrides: { log: { level: 'silent' }, planning: { host: '127.0.0.1', port: 0, max_body_bytes: MAX_BODY, rate_limit_per_sec: 1000, rate_limit_burst: 1000, ...overrides } },
  });

const today = () => new Date().toISOString().slice(0, 10);

describe.each<Backend>(['pglite', 'pg'])('planning API on %s', (backend) => {
  let database: { db: Db; drop(): Promise<void> };
  let svc: ServiceHandle;
  let base: string;
  let acmeKey: string;
  let acmeViewerKey: string;
  let globexKey: string;
  const ann = { email: 'ann@example.com', password: 'ann-secret-1', id: '' };
  const bob = { email: 'bob@example.com', password: 'bob-secret-1', id: '' };

  async function call(method: string, path: string, c: Call = {}): Promise<{ status: number; body: Json; headers: Headers }> {
    const headers: Record<string, string> = {};
    if (c.key) headers.authorization = `Bearer ${c.key}`;
    if (c.basic) headers.authorization = `Basic ${Buffer.from(`${c.basic[0]}:${c.basic[1]}`).toString('base64')}`;
    if (c.tenant) headers['x-tenant-id'] = c.tenant;
    let body: string | undefined;
    if (c.raw !== undefined || c.body !== undefined) {
      headers['content-type'] = c.contentType ?? 'application/json';
      body = c.raw ?? JSON.stringify(c.body);
    }
    const res = await fetch(`${base}${path}`, { method, headers, body });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text), headers: res.headers };
  }
  const acme = (method: string, path: string, body?: unknown) => call(method, path, { key: acmeKey, body });
  const globex = (method: string, path: string, body?: unknown) => call(method, path, { key: globexKey, body });

  beforeAll(async () => {
    database = await migratedDatabase(backend);
    const db = database.db;
    acmeKey = (await bootstrapTenant(db, 'acme')).api_key.secret;
    globexKey = (await bootstrapTenant(db, 'globex')).api_key.secret;
    acmeViewerKey = (await createApiKey(db, { tenantId: 'acme', scopes: ['query'], name: 'reader' })).secret;
    ann.id = (await createUser(db, { email: ann.email, password: ann.password, displayName: 'Ann Analyst' })).id;
    bob.id = (await createUser(db, { email: bob.email, password: bob.password })).id;
    await grantMembership(db, { tenantId: 'acme', userId: ann.id, role: 'member', grantedBy: 'admin' });
    await grantMembership(db, { tenantId: 'globex', userId: bob.id, role: 'member', grantedBy: 'admin' });
    svc = await start(config(), { log: silentLogger(), db });
    base = `http://127.0.0.1:${svc.ports.http}`;
  });
  afterAll(async () => {
    await svc?.stop();
    await database?.drop();
  });

  it('answers /ready', async () => {
    const res = await fetch(`${base}/ready`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready' });
  });

  it('answers a request Node refuses before routing (headers too large) in the planning body, message included', async () => {
    const { hostname, port } = new URL(base);
    const got = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({ hostname, port, path: '/api/v1/features', method: 'GET', headers: { 'x-big': 'x'.repeat(20_000) } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end();
    });
    expect({ status: got.status, body: JSON.parse(got.body) }).toEqual({
      status: 431,
      body: { status: 'error', errorType: 'bad_data', error: 'request headers too large', message: 'request headers too large' },
    });
  });

  describe('authentication', () => {
    it.each<[string, Call, number]>([
      ['no credentials', {}, 401],
      ['an unknown key', { key: 'floe_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, 401],
      ['a malformed header value', { key: 'not a key' }, 401],
      ['a wrong password', { basic: ['ann@example.com', 'wrong-password'], tenant: 'acme' }, 401],
      ['Basic without X-Tenant-ID', { basic: ['ann@example.com', 'ann-secret-1'] }, 401],
      ['a tenant the user is not a member of', { basic: ['ann@example.com', 'ann-secret-1'], tenant: 'globex' }, 403],
    ])('refuses %s', async (_name, c, status) => {
      const res = await call('GET', '/api/v1/features', c);
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ status: 'error', errorType: status === 401 ? 'unauthorized' : 'forbidden' });
      expect(typeof res.body.message).toBe('string');
    });

    it('refuses a key presented for another tenant (403)', async () => {
      const res = await call('GET', '/api/v1/features', { key: acmeKey, tenant: 'globex' });
      expect(res.status).toBe(403);
    });

    it('lets a read-only key read but not write', async () => {
      expect((await call('GET', '/api/v1/products', { key: acmeViewerKey })).status).toBe(200);
      const res = await call('POST', '/api/v1/products', { key: acmeViewerKey, body: { product: { name: 'X', reference_prefix: 'XX' } } });
      expect(res.status).toBe(403);
    });

    it('locks Basic sign-in of an account after five wrong passwords: 429 with retry_after, the right password too', async () => {
      const cy = { email: 'cy@example.com', password: 'cy-secret-1' };
      const id = (await createUser(database.db, { email: cy.email, password: cy.password })).id;
      await grantMembership(database.db, { tenantId: 'acme', userId: id, role: 'member', grantedBy: 'admin' });
      for (let i = 0; i < 5; i++) expect((await call('GET', '/api/v1/features', { basic: [cy.email, `guess-${i}`], tenant: 'acme' })).status).toBe(401);
      const locked = await call('GET', '/api/v1/features', { basic: [cy.email, cy.password], tenant: 'acme' });
      expect(locked.status).toBe(429);
      expect(locked.body).toMatchObject({ status: 'error', errorType: 'rate_limited', message: expect.stringMatching(/^too many failed sign-ins for this account; try again in \d+ s$/), retry_after: expect.any(Number) });
      expect(locked.headers.get('retry-after')).toBe(String(locked.body.retry_after));
      // Other accounts are not held.
      expect((await call('GET', '/api/v1/features', { basic: [ann.email, ann.password], tenant: 'acme' })).status).toBe(200);
    });
  });

  describe('a planning flow', () => {
    let release: Json;
    const features: Json[] = [];

    it('creates a product with its workflows (admins only)', async () => {
      const res = await acme('POST', '/api/v1/products', { product: { name: 'Checkout', reference_prefix: 'PRJ1' } });
      expect(res.status).toBe(201);
      expect(res.body.product).toMatchObject({ name: 'Checkout', reference_prefix: 'PRJ1', product_line: false });
      expect(res.body.product.id).toMatch(/^\d+$/);
      expect((await acme('POST', '/api/v1/products', { product: { name: 'Again', reference_prefix: 'PRJ1' } })).status).toBe(409);
      const member = await call('POST', '/api/v1/products', { basic: [ann.email, ann.password], tenant: 'acme', body: { product: { name: 'Mine', reference_prefix: 'ANN' } } });
      expect(member.status).toBe(403);
      expect((await acme('GET', '/api/v1/products/prj1')).body.product.name).toBe('Checkout');
    });

    it('creates releases in the product, numbered PRJ1-R-n', async () => {
      const res = await acme('POST', '/api/v1/products/PRJ1/releases', {
        release: { name: 'Q3 launch', theme: 'Speed', start_date: '2025-07-01', release_date: '2025-09-30', tags: ['q3', 'launch'], custom_fields: { budget: 1200 } },
      });
      expect(res.status).toBe(201);
      release = res.body.release;
      expect(release).toMatchObject({
        name: 'Q3 launch',
        reference_num: 'PRJ1-R-1',
        theme: 'Speed',
        start_date: '2025-07-01',
        release_date: '2025-09-30',
        external_release_date: null,
        parking_lot: false,
        position: 1,
        tags: ['q3', 'launch'],
        workflow_status: { name: 'Planned', complete: false, position: 1 },
        comments_count: 0,
        phases: [],
        goals: [],
        custom_fields: [{ key: 'budget', name: 'budget', value: 1200, type: 'number' }],
        created_by_user: { name: expect.stringMatching(/^API key /), email: '' },
        owner: null,
        status_changed_on: today(),
      });
      expect(release.full_tags.map((t: Json) => t.name)).toEqual(['q3', 'launch']);
      expect(release.workflow_status_times).toEqual([expect.objectContaining({ status_name: 'Planned', ended_at: null })]);
      expect(release.project).toMatchObject({ reference_prefix: 'PRJ1', name: 'Checkout', product_line: false, workspace_type: 'product_workspace' });
      const parked = await acme('POST', '/api/v1/products/PRJ1/releases', { release: { name: 'Parking lot', parking_lot: true } });
      expect(parked.body.release.reference_num).toBe('PRJ1-R-2');
      expect((await acme('POST', '/api/v1/products/PRJ1/releases', { release: { theme: 'no name' } })).status).toBe(400);
    });

    it('creates features in a release, numbered PRJ1-n, by key and by a member user', async () => {
      const specs = [
        { name: 'One-click checkout', tags: ['payments', 'ux'], assigned_to_user: ann.email, description: '<p>Buy now</p>', start_date: '2025-07-02' },
        { name: 'Apple Pay', tags: ['payments'], initial_estimate_text: '2d 4h', workflow_kind: 'Improvement' },
        { name: 'Address autocomplete', tags: 'ux, forms', remaining_estimate: 30, detailed_estimate: 120 },
        { name: 'Gift cards' },
      ];
      for (const [i, spec] of specs.entries()) {
        const res =
          i === 1
            ? await call('POST', `/api/v1/releases/${release.reference_num}/features?disable_mailers=true`, { basic: [ann.email, ann.password], tenant: 'acme', body: { feature: spec } })
            : await acme('POST', `/api/v1/releases/${release.id}/features`, { feature: spec });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        features.push(res.body.feature);
      }
      expect(features.map((f) => f.reference_num)).toEqual(['PRJ1-1', 'PRJ1-2', 'PRJ1-3', 'PRJ1-4']);
      const [one, two, three] = features;
      expect(one).toMatchObject({
        name: 'One-click checkout',
        release_reference_num: 'PRJ1-R-1',
        epic_reference_num: null,
        initiative_reference_num: null,
        product_id: release.product_id,
        position: 1,
        score: 0,
        progress: 0,
        progress_source: 'progress_manual',
        comments_count: 0,
        start_date: '2025-07-02',
        due_date: null,
        status_changed_on: today(),
        assigned_to_user: { id: ann.id, name: 'Ann Analyst', email: ann.email },
        workflow_kind: { name: 'New' },
        workflow_status: { name: 'Under consideration', complete: false, position: 1, color: expect.any(String) },
        description: { body: '<p>Buy now</p>', attachments: [] },
        release: { id: release.id, reference_num: 'PRJ1-R-1', name: 'Q3 launch', release_date: '2025-09-30' },
        tags: ['payments', 'ux'],
        feature_only_original_estimate: null,
        feature_only_remaining_estimate: null,
        feature_only_work_done: null,
      });
      expect(two.created_by_user).toMatchObject({ id: ann.id, email: ann.email });
      expect(two.workflow_kind.name).toBe('Improvement');
      expect(two.feature_only_original_estimate).toBe(1200);
      expect(three.tags).toEqual(['ux', 'forms']);
      expect(three).toMatchObject({ feature_only_original_estimate: 120, feature_only_remaining_estimate: 30, feature_only_work_done: 90 });
    });

    it('returns every feature field with its type', async () => {
      const f = (await acme('GET', `/api/v1/features/${features[0].id}`)).body.feature;
      const strings = ['id', 'name', 'reference_num', 'product_id', 'progress_source', 'created_at', 'updated_at'];
      for (const k of strings) expect(typeof f[k], k).toBe('string');
      for (const k of ['initiative_reference_num', 'release_reference_num', 'epic_reference_num']) expect(f[k] === null || typeof f[k] === 'string', k).toBe(true);
      for (const k of ['position', 'score', 'progress', 'comments_count']) expect(Number.isInteger(f[k]), k).toBe(true);
      for (const k of ['start_date', 'due_date', 'status_changed_on']) expect(f[k] === null || /^\d{4}-\d{2}-\d{2}$/.test(f[k]), k).toBe(true);
      for (const k of ['created_at', 'updated_at']) expect(f[k]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      for (const k of ['attachments', 'requirements', 'goals', 'key_results', 'score_facts', 'full_tags', 'custom_fields', 'feature_links', 'integration_fields', 'tags', 'workflow_status_times']) {
        expect(Array.isArray(f[k]), k).toBe(true);
      }
      expect(Object.keys(f.workflow_status).sort()).toEqual(['color', 'complete', 'id', 'name', 'position']);
      expect(Object.keys(f.workflow_kind).sort()).toEqual(['id', 'name']);
      expect(Object.keys(f.project).sort()).toEqual(['created_at', 'id', 'name', 'product_line', 'reference_prefix', 'workspace_type']);
      expect(Object.keys(f.description).sort()).toEqual(['attachments', 'body', 'created_at', 'id', 'updated_at']);
      expect(f.created_by_user).toEqual(expect.objectContaining({ id: expect.any(String), name: expect.any(String), email: expect.any(String) }));
      for (const k of ['feature_only_original_estimate', 'feature_only_remaining_estimate', 'feature_only_work_done']) expect(f[k] === null || typeof f[k] === 'number', k).toBe(true);
      // By reference number, case-insensitively, the same record.
      expect((await acme('GET', '/api/v1/features/prj1-1')).body.feature).toEqual(f);
      expect((await acme('GET', '/api/v1/features/PRJ1-R-1')).status).toBe(404);
      expect((await acme('GET', '/api/v1/features/99999999999999999999999')).status).toBe(404);
      expect((await acme('GET', '/api/v1/features/PRJ1-1?fields=name,tags')).body.feature).toEqual({ id: f.id, name: f.name, tags: f.tags });
    });

    it('lists features with each filter', async () => {
      const names = async (query: string, path = '/api/v1/features') => {
        const res = await acme('GET', `${path}${query}`);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        return res.body.features.map((f: Json) => f.name);
      };
      expect(await names('')).toEqual(['One-click checkout', 'Apple Pay', 'Address autocomplete', 'Gift cards']);
      expect(await names('?q=CHECKOUT')).toEqual(['One-click checkout']);
      expect(await names('?q=%25')).toEqual([]); // a LIKE wildcard is matched literally
      expect(await names('?tag=payments')).toEqual(['One-click checkout', 'Apple Pay']);
      expect(await names('?tag=forms')).toEqual(['Address autocomplete']);
      expect(await names(`?assigned_to_user=${encodeURIComponent('ANN@example.com')}`)).toEqual(['One-click checkout']);
      expect(await names(`?assigned_to_user=${ann.id}`)).toEqual(['One-click checkout']);
      expect(await names('?assigned_to_user=nobody%40example.com')).toEqual([]);
      expect(await names(`?updated_since=${encodeURIComponent(features[1].updated_at)}`)).toEqual(['Address autocomplete', 'Gift cards']);
      expect(await names('?updated_since=2000-01-01')).toHaveLength(4);
      expect(await names('?tag=payments&q=apple')).toEqual(['Apple Pay']);
      expect(await names('', `/api/v1/releases/${release.reference_num}/features`)).toHaveLength(4);
      expect(await names('', '/api/v1/products/PRJ1/features')).toHaveLength(4);
      expect(await names('', `/api/v1/products/${release.product_id}/features`)).toHaveLength(4);
      expect((await acme('GET', '/api/v1/releases/PRJ1-R-99/features')).status).toBe(404);
      expect((await acme('GET', '/api/v1/products/NOPE/features')).status).toBe(404);

      const projected = await acme('GET', '/api/v1/features?fields=reference_num,workflow_status');
      expect(projected.body.features[0]).toEqual({ id: features[0].id, reference_num: 'PRJ1-1', workflow_status: features[0].workflow_status });
    });

    it('pages feature lists with meta.pagination', async () => {
      const page2 = await acme('GET', '/api/v1/features?per_page=3&page=2');
      expect(page2.body.features.map((f: Json) => f.reference_num)).toEqual(['PRJ1-4']);
      expect(page2.body.meta.pagination).toEqual({ current_page: 2, per_page: 3, total_pages: 2, total_records: 4, next_page: null, prev_page: 1 });
      const page1 = await acme('GET', '/api/v1/features?per_page=3');
      expect(page1.body.meta.pagination).toEqual({ current_page: 1, per_page: 3, total_pages: 2, total_records: 4, next_page: 2, prev_page: null });
      const dflt = await acme('GET', '/api/v1/features');
      expect(dflt.body.meta.pagination).toMatchObject({ per_page: 30, total_pages: 1 });
      const beyond = await acme('GET', '/api/v1/features?page=9');
      expect(beyond.body.features).toEqual([]);
    });

    it.each([
      ['page=0', /page/],
      ['page=abc', /page/],
      ['per_page=0', /per_page/],
      ['per_page=201', /per_page must be an integer from 1 to 200/],
      ['per_page=2.5', /per_page/],
      ['updated_since=yesterday', /updated_since must be an ISO 8601/],
      ['updated_since=2025-02-30T00:00:00Z', /updated_since/],
      // Beyond PostgreSQL's years 1 to 9999 (before: a 500 from the database).
      ['updated_since=0000-01-01', /updated_since must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z/],
      ['updated_since=9999-12-31T23:59:59-14:00', /updated_since must lie between/],
      ['assigned_to_user=ann', /assigned_to_user/],
      ['fields=name,secret', /fields: unknown field "secret"/],
      ['color=red', /color/],
      ['tag=a&tag=b', /tag/],
    ])('answers 400 for %s', async (query, message) => {
      const res = await acme('GET', `/api/v1/features?${query}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ errorType: 'bad_data', message });
    });

    it('moves a feature through its workflow and records the times', async () => {
      const id = features[0].id;
      const res = await acme('PUT', `/api/v1/features/${id}`, {
        feature: { workflow_status: { name: 'in development' }, tags: ['payments'], progress: 40, due_date: '2025-08-01', name: 'One-click checkout v2' },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const f = res.body.feature;
      expect(f).toMatchObject({ name: 'One-click checkout v2', progress: 40, due_date: '2025-08-01', tags: ['payments'], status_changed_on: today() });
      expect(f.workflow_status).toMatchObject({ name: 'In development', complete: false, position: 3 });
      expect(f.workflow_status_times).toHaveLength(2);
      expect(f.workflow_status_times[0]).toMatchObject({ status_name: 'Under consideration', ended_at: expect.any(String) });
      expect(f.workflow_status_times[1]).toMatchObject({ status_id: f.workflow_status.id, status_name: 'In development', ended_at: null });
      expect(f.updated_at > features[0].updated_at).toBe(true);
      const shipped = await acme('PUT', `/api/v1/features/${id}`, { feature: { workflow_status: { name: 'Shipped' } } });
      expect(shipped.body.feature.workflow_status).toMatchObject({ name: 'Shipped', complete: true });
      expect(shipped.body.feature.workflow_status_times).toHaveLength(3);
      const unknown = await acme('PUT', `/api/v1/features/${id}`, { feature: { workflow_status: { name: 'Done-ish' } } });
      expect(unknown.status).toBe(400);
      expect(unknown.body.message).toMatch(/Under consideration, Ready to develop, In development, Ready to ship, Shipped/);
      expect((await acme('PUT', `/api/v1/features/${id}`, { feature: { progress: '40' } })).status).toBe(400);
      expect((await acme('PUT', `/api/v1/features/${id}`, { feature: { colour: 'red' } })).status).toBe(400);
      expect((await acme('PUT', `/api/v1/features/${id}`, { feature: { team: 'blue' } })).status).toBe(400);
      expect((await acme('PUT', `/api/v1/features/${id}`, { feature: { assigned_to_user: bob.email } })).status).toBe(400); // not a member of acme
      for (const day of ['2025-13-01', '2025-02-30', '0000-01-01']) {
        expect((await acme('PUT', `/api/v1/features/${id}`, { feature: { start_date: day } })).status, day).toBe(400);
      }
      expect((await acme('PUT', '/api/v1/features/PRJ1-404', { feature: { name: 'x' } })).status).toBe(404);
    });

    it('updates custom fields by key', async () => {
      const id = features[1].reference_num;
      const put = await acme('PUT', `/api/v1/features/${id}/custom_fields`, { feature: { custom_fields: { customer_impact: 'high', regions: ['eu', 'us'], effort: 3 } } });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      expect(put.body.feature.custom_fields).toEqual([
        { key: 'customer_impact', name: 'customer_impact', value: 'high', type: 'string' },
        { key: 'effort', name: 'effort', value: 3, type: 'number' },
        { key: 'regions', name: 'regions', value: ['eu', 'us'], type: 'array' },
      ]);
      const removed = await acme('PUT', `/api/v1/features/${id}/custom_fields`, { feature: { custom_fields: { effort: null } } });
      expect(removed.body.feature.custom_fields.map((c: Json) => c.key)).toEqual(['customer_impact', 'regions']);
      // Any valid key is kept, even one JavaScript objects treat specially (it was dropped, with 200).
      const proto = await acme('PUT', `/api/v1/features/${id}/custom_fields`, { feature: { custom_fields: { ['__proto__']: 'x' } } });
      expect(proto.status).toBe(200);
      expect(proto.body.feature.custom_fields.map((c: Json) => c.key).sort()).toEqual(['__proto__', 'customer_impact', 'regions']);
      const unproto = await acme('PUT', `/api/v1/features/${id}/custom_fields`, { feature: { custom_fields: { ['__proto__']: null } } });
      expect(unproto.body.feature.custom_fields.map((c: Json) => c.key)).toEqual(['customer_impact', 'regions']);
      expect((await acme('PUT', `/api/v1/features/${id}/custom_fields`, { feature: { custom_fields: { 'bad key!': 1 } } })).status).toBe(400);
      expect((await acme('PUT', `/api/v1/features/${id}/custom_fields`, { feature: { custom_fields: { nested: { a: 1 } } } })).status).toBe(400);
    });

    it('adds and lists comments', async () => {
      const ref = features[0].reference_num;
      const byKey = await acme('POST', `/api/v1/features/${ref}/comments`, { body: 'Looks good' });
      expect(byKey.status).toBe(201);
      expect(byKey.body).toMatchObject({ id: expect.stringMatching(/^\d+$/), body: 'Looks good', created_at: expect.any(String), user: { name: expect.stringMatching(/^API key /) } });
      const byAnn = await call('POST', `/api/v1/features/${ref}/comments`, { basic: [ann.email, ann.password], tenant: 'acme', body: { comment: { body: 'Agreed' } } });
      expect(byAnn.body.user).toEqual({ id: ann.id, name: 'Ann Analyst', email: ann.email, created_at: expect.any(String), updated_at: expect.any(String) });
      const list = await acme('GET', `/api/v1/features/${ref}/comments`);
      expect(list.body.comments.map((c: Json) => c.body)).toEqual(['Looks good', 'Agreed']);
      const second = await acme('GET', `/api/v1/features/${ref}/comments?per_page=1&page=2`);
      expect(second.body.comments.map((c: Json) => c.body)).toEqual(['Agreed']);
      expect(second.body.meta.pagination).toEqual({ current_page: 2, per_page: 1, total_pages: 2, total_records: 2, next_page: null, prev_page: 1 });
      expect((await acme('GET', `/api/v1/features/${ref}`)).body.feature.comments_count).toBe(2);
      expect((await acme('GET', `/api/v1/releases/${release.id}/comments`)).body.comments).toEqual([]);
      expect((await acme('GET', '/api/v1/products/PRJ1/comments')).status).toBe(200);
      expect((await acme('GET', '/api/v1/ideas/12/comments')).status).toBe(404);
      expect((await acme('POST', `/api/v1/features/${ref}/comments`, { body: '' })).status).toBe(400);
      expect((await acme('POST', `/api/v1/features/${ref}/comments`, {})).status).toBe(400);
      expect((await acme('POST', '/api/v1/features/PRJ1-999/comments', { body: 'x' })).status).toBe(404);
    });

    it('keeps competitors of a product (create, list, get, update, delete)', async () => {
      const created = await acme('POST', '/api/v1/products/PRJ1/competitors', { competitor: { name: 'Shopr', description: 'Rival', strengths: 'Price', weaknesses: 'Support' } });
      expect(created.status).toBe(201);
      const c = created.body;
      expect(c).toMatchObject({ id: expect.stringMatching(/^\d+$/), name: 'Shopr', description: 'Rival', strengths: 'Price', weaknesses: 'Support' });
      await acme('POST', '/api/v1/products/PRJ1/competitors', { competitor: { name: 'Buyly' } });
      const list = await acme('GET', '/api/v1/products/PRJ1/competitors');
      expect(list.body.competitors.map((x: Json) => x.name)).toEqual(['Shopr', 'Buyly']);
      const first = await acme('GET', '/api/v1/products/PRJ1/competitors?per_page=1');
      expect(first.body.competitors.map((x: Json) => x.name)).toEqual(['Shopr']);
      expect(first.body.meta.pagination).toMatchObject({ current_page: 1, total_pages: 2, total_records: 2, next_page: 2 });
      expect(list.body.competitors[1]).toMatchObject({ description: '', strengths: '', weaknesses: '' });
      expect((await acme('GET', `/api/v1/competitors/${c.id}`)).body).toEqual(c);
      const updated = await acme('PUT', `/api/v1/competitors/${c.id}`, { competitor: { weaknesses: 'Support, uptime' } });
      expect(updated.body).toMatchObject({ name: 'Shopr', weaknesses: 'Support, uptime' });
      expect((await acme('POST', '/api/v1/products/PRJ1/competitors', { competitor: { description: 'no name' } })).status).toBe(400);
      expect((await acme('DELETE', `/api/v1/competitors/${c.id}`)).status).toBe(204);
      expect((await acme('GET', `/api/v1/competitors/${c.id}`)).status).toBe(404);
      expect((await acme('GET', '/api/v1/competitors/not-an-id')).status).toBe(404);
    });

    it('groups features in epics of a product or release', async () => {
      const inProduct = await acme('POST', '/api/v1/products/PRJ1/epics', { epic: { name: 'Payments', tags: ['payments'], assigned_to_user: ann.id } });
      expect(inProduct.status, JSON.stringify(inProduct.body)).toBe(201);
      const epic = inProduct.body.epic;
      expect(epic).toMatchObject({
        reference_num: 'PRJ1-E-1',
        release: null,
        workflow_status: { name: 'Under consideration' },
        assigned_to_user: { id: ann.id },
        created_by: { name: expect.stringMatching(/^API key /) },
        features: [],
        goals: [],
        key_results: [],
        progress: 0,
        progress_source: 'progress_manual',
        duration_source: 'duration_manual',
        project: { reference_prefix: 'PRJ1' },
      });
      const inRelease = await acme('POST', `/api/v1/releases/${release.reference_num}/epics`, { epic: { name: 'Onboarding' } });
      expect(inRelease.body.epic).toMatchObject({ reference_num: 'PRJ1-E-2', release: { reference_num: 'PRJ1-R-1' } });

      const linked = await acme('PUT', `/api/v1/features/${features[1].id}`, { feature: { epic: 'PRJ1-E-1' } });
      expect(linked.body.feature.epic_reference_num).toBe('PRJ1-E-1');
      expect((await acme('GET', '/api/v1/epics/prj1-e-1')).body.epic.features.map((f: Json) => f.reference_num)).toEqual(['PRJ1-2']);
      expect((await acme('GET', '/api/v1/epics/PRJ1-E-1/features')).body.features.map((f: Json) => f.reference_num)).toEqual(['PRJ1-2']);

      const all = await acme('GET', '/api/v1/epics');
      expect(all.body.epics.map((e: Json) => e.reference_num)).toEqual(['PRJ1-E-1', 'PRJ1-E-2']);
      expect(all.body.meta.pagination).toMatchObject({ total_records: 2 });
      expect((await acme('GET', '/api/v1/epics?tag=payments')).body.epics.map((e: Json) => e.name)).toEqual(['Payments']);
      expect((await acme('GET', `/api/v1/epics?assigned_to_user=${ann.email}`)).body.epics.map((e: Json) => e.name)).toEqual(['Payments']);
      expect((await acme('GET', '/api/v1/epics?q=board')).body.epics.map((e: Json) => e.name)).toEqual(['Onboarding']);
      expect((await acme('GET', '/api/v1/products/PRJ1/epics')).body.epics).toHaveLength(2);
      expect((await acme('GET', `/api/v1/releases/${release.id}/epics`)).body.epics.map((e: Json) => e.name)).toEqual(['Onboarding']);

      const moved = await acme('PUT', `/api/v1/epics/${epic.id}`, { epic: { workflow_status: { name: 'Ready to develop' }, release: release.id, due_date: '2025-09-01' } });
      expect(moved.body.epic).toMatchObject({ workflow_status: { name: 'Ready to develop' }, release: { id: release.id }, due_date: '2025-09-01' });
      expect((await acme('POST', `/api/v1/epics/${epic.id}/comments`, { body: 'Scope agreed' })).status).toBe(201);
      expect((await acme('GET', `/api/v1/epics/${epic.id}/comments`)).body.comments).toHaveLength(1);
      expect((await acme('GET', '/api/v1/epics/PRJ1-E-9')).status).toBe(404);
    });

    it('reads requirements, and 404s an unknown one', async () => {
      expect((await acme('GET', '/api/v1/requirements/999999')).status).toBe(404);
      expect((await acme('GET', '/api/v1/requirements/PRJ1-1-1')).body).toMatchObject({ status: 'error', errorType: 'not_found' });
      const created = await acme('POST', '/api/v1/features/PRJ1-1/requirements', { requirement: { name: 'Saved card', description: 'Use the stored card' } });
      expect(created.status).toBe(201);
      const got = await acme('GET', '/api/v1/requirements/PRJ1-1-1');
      expect(got.body.requirement).toMatchObject({
        id: created.body.requirement.id,
        name: 'Saved card',
        reference_num: 'PRJ1-1-1',
        position: 1,
        release_id: release.id,
        workflow_status: { name: 'Under consideration' },
        description: { body: 'Use the stored card' },
        created_by_user: { email: '' },
      });
      expect((await acme('GET', '/api/v1/features/PRJ1-1')).body.feature.requirements.map((r: Json) => r.reference_num)).toEqual(['PRJ1-1-1']);
      expect((await acme('POST', '/api/v1/requirements/PRJ1-1-1/comments', { body: 'Edge cases?' })).status).toBe(201);
    });

    it('lists features and epics by goal and initiative', async () => {
      const goal = (await acme('POST', '/api/v1/products/PRJ1/goals', { goal: { name: 'Grow conversion' } })).body.goal;
      const initiative = (await acme('POST', '/api/v1/products/PRJ1/initiatives', { initiative: { name: 'Frictionless pay' } })).body.initiative;
      expect(goal.reference_num).toBe('PRJ1-G-1');
      expect(initiative.reference_num).toBe('PRJ1-I-1');
      await acme('PUT', `/api/v1/features/${features[1].id}`, { feature: { goals: [goal.id], initiative: initiative.reference_num } });
      await acme('PUT', '/api/v1/epics/PRJ1-E-1', { epic: { goals: ['PRJ1-G-1'], initiative: initiative.id } });
      const byGoal = await acme('GET', `/api/v1/goals/${goal.id}/features`);
      expect(byGoal.body.features.map((f: Json) => f.reference_num)).toEqual(['PRJ1-2']);
      expect(byGoal.body.features[0]).toMatchObject({ initiative_reference_num: 'PRJ1-I-1', goals: [{ id: goal.id, reference_num: 'PRJ1-G-1', name: 'Grow conversion' }] });
      expect((await acme('GET', '/api/v1/initiatives/PRJ1-I-1/features')).body.features.map((f: Json) => f.reference_num)).toEqual(['PRJ1-2']);
      expect((await acme('GET', '/api/v1/goals/PRJ1-G-1/epics')).body.epics.map((e: Json) => e.reference_num)).toEqual(['PRJ1-E-1']);
      expect((await acme('GET', `/api/v1/initiatives/${initiative.id}/epics`)).body.epics[0].initiative_reference_num).toBe('PRJ1-I-1');
      expect((await acme('GET', '/api/v1/goals/PRJ1-G-7/features')).status).toBe(404);
      expect((await acme('PUT', `/api/v1/features/${features[1].id}`, { feature: { goals: ['PRJ1-G-7'] } })).status).toBe(400);
    });

    it('lists and updates releases with top-level pagination, also as meta.pagination', async () => {
      const all = await acme('GET', '/api/v1/releases');
      expect(all.body.releases.map((r: Json) => r.reference_num)).toEqual(['PRJ1-R-1', 'PRJ1-R-2']);
      expect(all.body.pagination).toMatchObject({ total_records: 2, total_pages: 1, current_page: 1, per_page: 30 });
      expect(all.body.meta).toEqual({ pagination: all.body.pagination });
      expect(all.body.pagination).toEqual({ total_records: 2, total_pages: 1, current_page: 1, per_page: 30, next_page: null, prev_page: null });
      const product = await acme('GET', '/api/v1/products/PRJ1/releases?per_page=1&page=2');
      expect(product.body.releases.map((r: Json) => r.name)).toEqual(['Parking lot']);
      expect(product.body.pagination).toMatchObject({ total_records: 2, total_pages: 2, current_page: 2, per_page: 1 });
      expect((await acme('GET', '/api/v1/products/PRJ1/releases')).body.pagination.per_page).toBe(20);
      expect((await acme('GET', '/api/v1/releases?parking_lot=true')).body.releases.map((r: Json) => r.name)).toEqual(['Parking lot']);
      expect((await acme('GET', '/api/v1/releases?parking_lot=yes')).status).toBe(400);
      expect((await acme('GET', '/api/v1/releases?q=LAUNCH&fields=name')).body.releases).toEqual([{ id: release.id, name: 'Q3 launch' }]);
      expect((await acme('GET', '/api/v1/products/PRJ1/releases?assigned_to_user=x@y.z')).status).toBe(400); // not a filter of this list

      const updated = await acme('PUT', `/api/v1/releases/${release.reference_num}`, {
        release: { development_started_on: '2025-07-03', released_on: '2025-09-29', workflow_status: { name: 'Released' }, assigned_to_user_id: ann.email },
      });
      expect(updated.status, JSON.stringify(updated.body)).toBe(200);
      expect(updated.body.release).toMatchObject({
        development_started_on: '2025-07-03',
        released_on: '2025-09-29',
        workflow_status: { name: 'Released', complete: true },
        owner: { id: ann.id },
        assigned_to_user: { id: ann.id },
      });
      expect((await acme('GET', '/api/v1/releases?status=released')).body.releases.map((r: Json) => r.name)).toEqual(['Q3 launch']);
      expect((await acme('POST', '/api/v1/products/PRJ1/releases', { release: { name: 'Late', released_on: '2025-01-01' } })).status).toBe(400); // update-only field
    });

    it('keeps phases of a release: listed in the release, named by a feature, with their own comments', async () => {
      const phaseOf = (res: { body: Json }) => res.body.release_phase;
      const design = await acme('POST', `/api/v1/releases/${release.reference_num}/release_phases`, { release_phase: { name: 'Design', start_date: '2025-07-01', end_date: '2025-07-31' } });
      expect(design.status, JSON.stringify(design.body)).toBe(201);
      expect(phaseOf(design)).toEqual({
        id: expect.stringMatching(/^\d+$/),
        name: 'Design',
        start_date: '2025-07-01',
        end_date: '2025-07-31',
        position: 1,
        release_id: release.id,
        created_at: expect.stringMatching(/Z$/),
        updated_at: expect.stringMatching(/Z$/),
      });
      const build = phaseOf(await acme('POST', `/api/v1/releases/${release.id}/release_phases`, { release_phase: { name: 'Build' } }));
      expect(build.position).toBe(2);
      const designId = phaseOf(design).id;

      const list = await acme('GET', `/api/v1/releases/${release.reference_num}/release_phases?per_page=1&page=2`);
      expect(list.body.release_phases.map((p: Json) => p.name)).toEqual(['Build']);
      expect(list.body.meta.pagination).toMatchObject({ total_records: 2, total_pages: 2, current_page: 2 });
      expect((await acme('GET', `/api/v1/release_phases/${designId}?fields=name`)).body.release_phase).toEqual({ id: designId, name: 'Design' });
      expect((await acme('GET', `/api/v1/releases/${release.id}`)).body.release.phases).toEqual([
        { id: designId, name: 'Design', start_date: '2025-07-01', end_date: '2025-07-31', position: 1 },
        { id: build.id, name: 'Build', start_date: null, end_date: null, position: 2 },
      ]);

      // Dates: each end is held to the stored other one; a refused update changes nothing.
      const dated = await acme('PUT', `/api/v1/release_phases/${build.id}`, { release_phase: { start_date: '2025-08-01', end_date: '2025-09-15', position: 3 } });
      expect(phaseOf(dated)).toMatchObject({ start_date: '2025-08-01', end_date: '2025-09-15', position: 3 });
      // A release lists its phases by position, not by creation.
      expect(phaseOf(await acme('PUT', `/api/v1/release_phases/${designId}`, { release_phase: { position: 4 } })).position).toBe(4);
      expect((await acme('GET', `/api/v1/releases/${release.id}`)).body.release.phases.map((p: Json) => p.name)).toEqual(['Build', 'Design']);
      const backwards = await acme('PUT', `/api/v1/release_phases/${build.id}`, { release_phase: { end_date: '2025-07-15', name: 'Renamed' } });
      expect(backwards.status).toBe(400);
      expect(backwards.body.message).toMatch(/end_date 2025-07-15 is before start_date 2025-08-01/);
      expect(phaseOf(await acme('GET', `/api/v1/release_phases/${build.id}`))).toMatchObject({ name: 'Build', end_date: '2025-09-15' });
      expect((await acme('POST', `/api/v1/releases/${release.id}/release_phases`, { release_phase: { start_date: '2025-07-01' } })).status).toBe(400); // no name
      expect((await acme('POST', `/api/v1/releases/${release.id}/release_phases`, { release_phase: { name: 'X', end_date: '2025-02-30' } })).status).toBe(400);
      expect((await acme('POST', '/api/v1/releases/PRJ1-R-99/release_phases', { release_phase: { name: 'X' } })).status).toBe(404);
      expect((await acme('GET', '/api/v1/release_phases/99999999')).status).toBe(404);
      expect((await acme('GET', '/api/v1/release_phases/PRJ1-R-1')).status).toBe(404);

      // A feature names a phase of its release by name (any case) or id; nothing else.
      const f = features[0];
      const named = await acme('PUT', `/api/v1/features/${f.id}`, { feature: { release_phase: 'build' } });
      expect(named.status, JSON.stringify(named.body)).toBe(200);
      expect(named.body.feature.release_phase).toEqual({ id: build.id, name: 'Build', start_date: '2025-08-01', end_date: '2025-09-15', position: 3 });
      expect((await acme('PUT', `/api/v1/features/${f.id}`, { feature: { release_phase: Number(designId) } })).body.feature.release_phase.name).toBe('Design');
      const unknown = await acme('PUT', `/api/v1/features/${f.id}`, { feature: { release_phase: 'Launch' } });
      expect(unknown.status).toBe(400);
      expect(unknown.body.message).toMatch(/no phase "Launch".*Build \(\d+\), Design \(\d+\)/);
      const parked = (await acme('GET', '/api/v1/releases/PRJ1-R-2')).body.release;
      const parkedPhase = phaseOf(await acme('POST', `/api/v1/releases/${parked.id}/release_phases`, { release_phase: { name: 'Someday' } }));
      expect((await acme('PUT', `/api/v1/features/${f.id}`, { feature: { release_phase: parkedPhase.id } })).status).toBe(400);
      expect((await acme('GET', `/api/v1/features/${f.id}`)).body.feature.release_phase.name).toBe('Design');
      // Moving the feature takes it out of its old release's phase, or into one of the new release's.
      expect((await acme('PUT', `/api/v1/features/${f.id}`, { feature: { release: 'PRJ1-R-2' } })).body.feature.release_phase).toBeNull();
      const back = await acme('PUT', `/api/v1/features/${f.id}`, { feature: { release: release.reference_num, release_phase: 'Design' } });
      expect(back.body.feature).toMatchObject({ release_reference_num: 'PRJ1-R-1', release_phase: { id: designId } });

      // Comments: listed on a phase (spec 3 adds none there); deleting the phase takes them and clears features.
      await database.db.query(`INSERT INTO planning_comments (tenant_id, parent_kind, parent_id, body) VALUES ('acme', 'release_phase', $1, 'kick-off')`, [designId]);
      expect((await acme('GET', `/api/v1/release_phases/${designId}/comments`)).body.comments.map((c: Json) => c.body)).toEqual(['kick-off']);
      expect((await acme('POST', `/api/v1/release_phases/${designId}/comments`, { body: 'x' })).status).toBe(404);
      expect((await call('GET', `/api/v1/release_phases/${designId}`, { key: globexKey })).status).toBe(404);
      expect((await call('DELETE', `/api/v1/release_phases/${designId}`, { key: globexKey })).status).toBe(404);
      expect((await acme('DELETE', `/api/v1/release_phases/${designId}`)).status).toBe(204);
      expect((await acme('GET', `/api/v1/release_phases/${designId}`)).status).toBe(404);
      expect((await acme('GET', `/api/v1/release_phases/${designId}/comments`)).status).toBe(404);
      expect((await acme('GET', `/api/v1/features/${f.id}`)).body.feature.release_phase).toBeNull();
      const { rows } = await database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM planning_comments WHERE parent_kind = 'release_phase' AND parent_id = $1`, [designId]);
      expect(rows[0]!.n).toBe(0);
      expect((await acme('GET', `/api/v1/releases/${release.id}`)).body.release.phases.map((p: Json) => p.name)).toEqual(['Build']);
    });

    it('keeps ideas of a product, numbered PRJ1-IDEA-n, with their comments', async () => {
      const product = (await acme('GET', '/api/v1/products/PRJ1')).body.product;
      const created = await acme('POST', '/api/v1/products/PRJ1/ideas?disable_mailers=true', { idea: { name: '  Pay by bank  ', description: 'Lower fees' } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const idea = created.body.idea;
      expect(idea).toEqual({
        id: expect.stringMatching(/^\d+$/),
        name: 'Pay by bank',
        reference_num: 'PRJ1-IDEA-1',
        product_id: product.id,
        description: { id: idea.id, body: 'Lower fees' },
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: idea.created_at,
        comments_count: 0,
      });
      const second = await call('POST', `/api/v1/products/${product.id}/ideas`, { basic: [ann.email, ann.password], tenant: 'acme', body: { idea: { name: 'Wallet top-up' } } });
      expect(second.status).toBe(201);
      expect(second.body.idea).toMatchObject({ reference_num: 'PRJ1-IDEA-2', description: { body: '' } });
      // Ideas count on their own: the initiative and goal numbers go on from where they were.
      expect((await acme('POST', '/api/v1/products/PRJ1/initiatives', { initiative: { name: 'Bank rails' } })).body.initiative.reference_num).toBe('PRJ1-I-2');

      expect(await acme('GET', `/api/v1/ideas/${idea.id}`)).toMatchObject({ status: 200, body: { idea } });
      expect(await acme('GET', '/api/v1/ideas/prj1-idea-1')).toMatchObject({ status: 200, body: { idea } });
      // PRJ1-I-1 is the initiative, not an idea.
      expect((await acme('GET', '/api/v1/ideas/PRJ1-I-1')).status).toBe(404);

      const comment = await acme('POST', '/api/v1/ideas/PRJ1-IDEA-1/comments', { body: 'Customers ask for it' });
      expect(comment.status).toBe(201);
      expect(comment.body).toMatchObject({ id: expect.stringMatching(/^\d+$/), body: 'Customers ask for it', user: { name: expect.stringMatching(/^API key /) } });
      expect((await acme('POST', `/api/v1/ideas/${idea.id}/comments`, { comment: { body: 'Which banks?' } })).status).toBe(201);
      const comments = await acme('GET', `/api/v1/ideas/${idea.id}/comments`);
      expect(comments.status).toBe(200);
      expect(comments.body.comments.map((c: Json) => c.body)).toEqual(['Customers ask for it', 'Which banks?']);
      expect(comments.body.meta.pagination).toMatchObject({ total_records: 2, current_page: 1 });
      expect((await acme('GET', '/api/v1/ideas/PRJ1-IDEA-1')).body.idea.comments_count).toBe(2);
      expect((await acme('GET', '/api/v1/ideas/PRJ1-IDEA-2/comments')).body.comments).toEqual([]);

      for (const path of ['/api/v1/ideas/PRJ1-IDEA-99', '/api/v1/ideas/999999999', '/api/v1/ideas/not-an-id', '/api/v1/ideas/PRJ1-IDEA-99/comments']) {
        const res = await acme('GET', path);
        expect(res.status, path).toBe(404);
        expect(res.body, path).toMatchObject({ status: 'error', errorType: 'not_found', message: expect.stringMatching(/^idea .* not found$/) });
      }
      expect((await acme('POST', '/api/v1/ideas/PRJ1-IDEA-99/comments', { body: 'x' })).status).toBe(404);
      expect((await acme('POST', '/api/v1/products/NOPE/ideas', { idea: { name: 'x' } })).body).toMatchObject({ errorType: 'not_found', message: 'product NOPE not found' });
      for (const body of [{ idea: {} }, { idea: { name: '' } }, { idea: { description: 'no name' } }, { name: 'unwrapped' }, { idea: { name: 'x', votes: 3 } }]) {
        const res = await acme('POST', '/api/v1/products/PRJ1/ideas', body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body).toMatchObject({ errorType: 'bad_data' });
      }
      expect((await call('POST', '/api/v1/products/PRJ1/ideas', { key: acmeViewerKey, body: { idea: { name: 'x' } } })).status).toBe(403);
      expect((await acme('GET', '/api/v1/ideas/PRJ1-IDEA-3')).status).toBe(404);

      expect((await globex('GET', `/api/v1/ideas/${idea.id}`)).status).toBe(404);
      expect((await globex('GET', '/api/v1/ideas/PRJ1-IDEA-1')).status).toBe(404);
      expect((await globex('GET', `/api/v1/ideas/${idea.id}/comments`)).status).toBe(404);
      expect((await globex('POST', `/api/v1/ideas/${idea.id}/comments`, { body: 'hi' })).status).toBe(404);
      expect((await globex('POST', `/api/v1/products/${product.id}/ideas`, { idea: { name: 'sneak' } })).status).toBe(404);
      expect((await acme('GET', `/api/v1/ideas/${idea.id}/comments`)).body.comments).toHaveLength(2);
    });

    it('keeps to-dos of a feature, with their (listed) comments', async () => {
      const feature = features[0];
      const created = await acme('POST', `/api/v1/features/${feature.reference_num}/to_dos?disable_mailers=false`, { to_do: { name: 'Check 3-D Secure', body: 'Both card networks', due_date: '2025-08-15' } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const todo = created.body.to_do;
      expect(todo).toEqual({
        id: expect.stringMatching(/^\d+$/),
        name: 'Check 3-D Secure',
        body: 'Both card networks',
        status: 'pending',
        due_date: '2025-08-15',
        feature_id: feature.id,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: todo.created_at,
        comments_count: 0,
      });
      const done = await call('POST', `/api/v1/features/${feature.id}/to_dos`, { basic: [ann.email, ann.password], tenant: 'acme', body: { to_do: { name: 'Write copy', status: 'complete' } } });
      expect(done.status).toBe(201);
      expect(done.body.to_do).toMatchObject({ name: 'Write copy', body: '', status: 'complete', due_date: null, feature_id: feature.id });

      const list = await acme('GET', `/api/v1/features/${feature.reference_num}/to_dos`);
      expect(list.status).toBe(200);
      expect(list.body.to_dos.map((t: Json) => t.name)).toEqual(['Check 3-D Secure', 'Write copy']);
      expect(list.body.to_dos[0]).toEqual(todo);
      expect(list.body.meta.pagination).toEqual({ current_page: 1, per_page: 30, total_pages: 1, total_records: 2, next_page: null, prev_page: null });
      const page2 = await acme('GET', `/api/v1/features/${feature.id}/to_dos?per_page=1&page=2`);
      expect(page2.body.to_dos.map((t: Json) => t.name)).toEqual(['Write copy']);
      expect(page2.body.meta.pagination).toMatchObject({ current_page: 2, total_pages: 2, prev_page: 1, next_page: null });
      expect((await acme('GET', `/api/v1/features/${features[1].id}/to_dos`)).body).toEqual({
        to_dos: [],
        meta: { pagination: { current_page: 1, per_page: 30, total_pages: 0, total_records: 0, next_page: null, prev_page: null } },
      });
      expect((await acme('GET', `/api/v1/features/${feature.id}/to_dos?q=copy`)).status).toBe(400);

      expect(await acme('GET', `/api/v1/to_dos/${todo.id}`)).toMatchObject({ status: 200, body: { to_do: todo } });
      const comments = await acme('GET', `/api/v1/to_dos/${todo.id}/comments`);
      expect(comments.status).toBe(200);
      expect(comments.body).toEqual({ comments: [], meta: { pagination: { current_page: 1, per_page: 30, total_pages: 0, total_records: 0, next_page: null, prev_page: null } } });
      // Spec 3 adds comments to features, epics, requirements, ideas and initiatives only.
      expect((await acme('POST', `/api/v1/to_dos/${todo.id}/comments`, { body: 'x' })).status).toBe(404);

      for (const path of ['/api/v1/to_dos/999999999', '/api/v1/to_dos/PRJ1-1', '/api/v1/to_dos/999999999/comments']) {
        const res = await acme('GET', path);
        expect(res.status, path).toBe(404);
        expect(res.body, path).toMatchObject({ status: 'error', errorType: 'not_found' });
      }
      for (const [method, body] of [['GET', undefined], ['POST', { to_do: { name: 'x' } }]] as const) {
        const res = await acme(method, '/api/v1/features/PRJ1-999/to_dos', body);
        expect(res.status, method).toBe(404);
        expect(res.body).toMatchObject({ errorType: 'not_found', message: 'feature PRJ1-999 not found' });
      }
      for (const body of [
        { to_do: {} },
        { to_do: { name: '' } },
        { to_do: { body: 'no name' } },
        { to_do: { name: 'x', status: 'done' } },
        { to_do: { name: 'x', due_date: '2025-02-30' } },
        { to_do: { name: 'x', due_date: 'tomorrow' } },
        { to_do: { name: 'x', assignee: 'ann' } },
        { todo: { name: 'x' } },
      ]) {
        const res = await acme('POST', `/api/v1/features/${feature.id}/to_dos`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body).toMatchObject({ errorType: 'bad_data' });
      }
      expect((await acme('GET', `/api/v1/features/${feature.id}/to_dos`)).body.meta.pagination.total_records).toBe(2);

      expect((await globex('GET', `/api/v1/to_dos/${todo.id}`)).status).toBe(404);
      expect((await globex('GET', `/api/v1/to_dos/${todo.id}/comments`)).status).toBe(404);
      expect((await globex('GET', `/api/v1/features/${feature.id}/to_dos`)).status).toBe(404);
      expect((await globex('POST', `/api/v1/features/${feature.id}/to_dos`, { to_do: { name: 'sneak' } })).status).toBe(404);
      expect((await acme('GET', `/api/v1/features/${feature.id}/to_dos`)).body.to_dos).toHaveLength(2);
    });

    it('keeps tenants apart', async () => {
      expect((await globex('GET', '/api/v1/features')).body.features).toEqual([]);
      expect((await globex('GET', '/api/v1/releases')).body.releases).toEqual([]);
      expect((await globex('GET', '/api/v1/epics')).body.epics).toEqual([]);
      expect((await globex('GET', '/api/v1/products')).body.products).toEqual([]);
      expect((await globex('GET', `/api/v1/features/${features[1].id}`)).status).toBe(404);
      expect((await globex('PUT', `/api/v1/features/${features[1].id}`, { feature: { name: 'pwned' } })).status).toBe(404);
      expect((await globex('DELETE', `/api/v1/features/${features[1].id}`)).status).toBe(404);
      expect((await globex('GET', `/api/v1/releases/${release.id}`)).status).toBe(404);
      expect((await globex('POST', `/api/v1/releases/${release.id}/features`, { feature: { name: 'sneak' } })).status).toBe(404);
      expect((await globex('GET', '/api/v1/products/PRJ1/competitors')).status).toBe(404);
      expect((await globex('POST', `/api/v1/features/${features[1].id}/comments`, { body: 'hi' })).status).toBe(404);
      expect((await globex('GET', `/api/v1/features/${features[0].id}/comments`)).status).toBe(404);

      // The same prefix in another tenant is another product, numbered on its own.
      const own = await globex('POST', '/api/v1/products', { product: { name: 'Globex', reference_prefix: 'PRJ1' } });
      expect(own.status).toBe(201);
      const rel = (await globex('POST', '/api/v1/products/PRJ1/releases', { release: { name: 'G1' } })).body.release;
      expect(rel.reference_num).toBe('PRJ1-R-1');
      const feat = await call('POST', `/api/v1/releases/${rel.id}/features`, { basic: [bob.email, bob.password], tenant: 'globex', body: { feature: { name: 'Globex feature' } } });
      expect(feat.body.feature.reference_num).toBe('PRJ1-1');
      expect((await globex('GET', '/api/v1/features/PRJ1-1')).body.feature.name).toBe('Globex feature');
      expect((await acme('GET', '/api/v1/features/PRJ1-1')).body.feature.name).toBe('One-click checkout v2');
      expect((await acme('GET', `/api/v1/features/${feat.body.feature.id}`)).status).toBe(404);
      expect((await acme('GET', '/api/v1/features')).body.meta.pagination.total_records).toBe(4);
      // A user of globex naming acme gets 403, whatever the records.
      expect((await call('GET', '/api/v1/features', { basic: [bob.email, bob.password], tenant: 'acme' })).status).toBe(403);
    });

    it('deletes a feature (204) with its comments and to-dos', async () => {
      const ref = features[3].reference_num;
      await acme('POST', `/api/v1/features/${ref}/comments`, { body: 'bye' });
      const todo = (await acme('POST', `/api/v1/features/${ref}/to_dos`, { to_do: { name: 'Last step' } })).body.to_do;
      // No route adds comments to a to-do; one written directly must still go with its feature.
      await database.db.query(`INSERT INTO planning_comments (tenant_id, parent_kind, parent_id, body) VALUES ('acme', 'to_do', $1, 'note')`, [todo.id]);
      expect((await acme('GET', `/api/v1/to_dos/${todo.id}`)).body.to_do.comments_count).toBe(1);
      expect((await acme('DELETE', `/api/v1/features/${ref}`)).status).toBe(204);
      expect((await acme('GET', `/api/v1/features/${ref}`)).status).toBe(404);
      expect((await acme('DELETE', `/api/v1/features/${ref}`)).status).toBe(404);
      expect((await acme('GET', `/api/v1/to_dos/${todo.id}`)).status).toBe(404);
      expect((await acme('GET', `/api/v1/to_dos/${todo.id}/comments`)).status).toBe(404);
      const { rows } = await database.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM planning_comments WHERE (parent_kind = 'feature' AND parent_id = $1) OR (parent_kind = 'to_do' AND parent_id = $2)`,
        [features[3].id, todo.id],
      );
      expect(rows[0]!.n).toBe(0);
    });
  });

  describe('bad input', () => {
    it('answers 400 for malformed JSON', async () => {
      const res = await call('POST', '/api/v1/products', { key: acmeKey, raw: '{"product": {"name": ' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ errorType: 'bad_data', message: 'body is not valid JSON' });
    });

    it('answers 413 for a body over planning.max_body_bytes', async () => {
      const res = await call('POST', '/api/v1/products/PRJ1/competitors', { key: acmeKey, body: { competitor: { name: 'Big', description: 'x'.repeat(MAX_BODY + 10) } } });
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ errorType: 'too_large', message: expect.any(String) });
    });

    it('answers 415 for a body that is not JSON', async () => {
      const res = await call('POST', '/api/v1/products', { key: acmeKey, raw: 'name=x', contentType: 'application/x-www-form-urlencoded' });
      expect(res.status).toBe(415);
    });

    it('answers 404 JSON for an unknown path', async () => {
      const res = await acme('GET', '/api/v1/nothing-here');
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ errorType: 'not_found' });
    });

    it('refuses a blank name (or comment) on every record that has one, and stores nothing', async () => {
      const competitor = (await acme('POST', '/api/v1/products/PRJ1/competitors', { competitor: { name: 'Rival' } })).body;
      const phase = (await acme('POST', '/api/v1/releases/PRJ1-R-1/release_phases', { release_phase: { name: 'Beta' } })).body.release_phase;
      const blank = ' \t\n ';
      const writes: Array<[string, string, unknown]> = [
        ['POST', '/api/v1/products', { product: { name: blank, reference_prefix: 'BLANK' } }],
        ['POST', '/api/v1/products/PRJ1/goals', { goal: { name: blank } }],
        ['POST', '/api/v1/products/PRJ1/initiatives', { initiative: { name: blank } }],
        ['POST', '/api/v1/products/PRJ1/ideas', { idea: { name: blank } }],
        ['POST', '/api/v1/products/PRJ1/competitors', { competitor: { name: blank } }],
        ['PUT', `/api/v1/competitors/${competitor.id}`, { competitor: { name: blank } }],
        ['POST', '/api/v1/features/PRJ1-1/requirements', { requirement: { name: blank } }],
        ['POST', '/api/v1/features/PRJ1-1/to_dos', { to_do: { name: blank } }],
        ['POST', '/api/v1/releases/PRJ1-R-1/release_phases', { release_phase: { name: blank } }],
        ['PUT', `/api/v1/release_phases/${phase.id}`, { release_phase: { name: blank } }],
        ['POST', '/api/v1/products/PRJ1/releases', { release: { name: blank } }],
        ['POST', '/api/v1/releases/PRJ1-R-1/features', { feature: { name: blank } }],
        ['PUT', '/api/v1/epics/PRJ1-E-1', { epic: { name: blank } }],
      ];
      for (const [method, path, body] of writes) {
        const res = await acme(method, path, body);
        expect(res.status, `${method} ${path}`).toBe(400);
        expect(res.body, `${method} ${path}`).toMatchObject({ status: 'error', errorType: 'bad_data', message: 'name must not be empty' });
      }
      const comment = await acme('POST', '/api/v1/features/PRJ1-1/comments', { body: blank });
      expect(comment.status).toBe(400);
      expect(comment.body).toMatchObject({ errorType: 'bad_data', message: 'body must not be empty' });
      expect((await acme('GET', `/api/v1/competitors/${competitor.id}`)).body.name).toBe('Rival');
      expect((await acme('GET', `/api/v1/release_phases/${phase.id}`)).body.release_phase.name).toBe('Beta');
      expect((await acme('GET', '/api/v1/products/BLANK')).status).toBe(404);
    });

    it('never answers 500 to hostile values', async () => {
      for (const path of [
        "/api/v1/features/1'%20OR%20'1'='1",
        '/api/v1/features?q=%27%3B%20DROP%20TABLE%20planning_features%3B--',
        '/api/v1/features?q=%00',
        '/api/v1/products/%E2%80%AE/releases',
        '/api/v1/features?updated_since=9999-12-31T23:59:59Z',
        '/api/v1/releases/0/features',
      ]) {
        const res = await acme('GET', path);
        expect(res.status, path).toBeLessThan(500);
      }
      const weird = await acme('POST', '/api/v1/products/PRJ1/competitors', { competitor: { name: "Robert'); DROP TABLE planning_competitors;--", description: 'nul \u0000 byte' } });
      expect(weird.status).toBeLessThan(500);
    });
  });

  describe('rate limit', () => {
    it('answers 429 with error, message, retry_after and the retry headers once the tenant bucket is empty', async () => {
      const limited = await start(config({ rate_limit_per_sec: 0.1, rate_limit_burst: 2 }), { log: silentLogger(), db: database.db });
      try {
        const url = `http://127.0.0.1:${limited.ports.http}/api/v1/products`;
        const get = (key: string) => fetch(url, { headers: { authorization: `Bearer ${key}` } });
        expect((await get(acmeKey)).status).toBe(200);
        expect((await get(acmeKey)).status).toBe(200);
        const refused = await get(acmeKey);
        expect(refused.status).toBe(429);
        const body = (await refused.json()) as Json;
        expect(body).toMatchObject({ error: expect.any(String), message: expect.stringMatching(/rate limit/), retry_after: expect.any(Number) });
        expect(Number.isInteger(body.retry_after) && body.retry_after >= 1).toBe(true);
        expect(refused.headers.get('retry-after')).toBe(String(body.retry_after));
        expect(refused.headers.get('retry_after')).toBe(String(body.retry_after));
        // Another tenant has its own bucket.
        expect((await get(globexKey)).status).toBe(200);
      } finally {
        await limited.stop();
      }
    });
  });

  describe('tenant deletion', () => {
    it('takes the tenant\'s planning records with it', async () => {
      const count = async () => (await database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM planning_features WHERE tenant_id = 'globex'`)).rows[0]!.n;
      expect(await count()).toBe(1);
      await deleteTenant(database.db, 'globex');
      expect(await count()).toBe(0);
      expect((await database.db.query(`SELECT 1 FROM planning_products WHERE tenant_id = 'globex'`)).rowCount).toBe(0);
      expect((await acme('GET', '/api/v1/features')).body.meta.pagination.total_records).toBe(3);
    });
  });

  describe('stop', () => {
    it('reports not-ready while draining, then closes', async () => {
      const other = await start(config(), { log: silentLogger(), db: database.db });
      const url = `http://127.0.0.1:${other.ports.http}/ready`;
      expect((await fetch(url)).status).toBe(200);
      other.drain?.();
      expect((await fetch(url)).status).toBe(503);
      await other.stop();
      await expect(fetch(url)).rejects.toThrow();
    });
  });
});

describe('planning API metrics', () => {
  it('serves GET /metrics with its requests by route and status when the process serves metrics', async () => {
    const database = await migratedDatabase('pglite');
    const telemetry = await startSelfMonitoring({ serviceName: 'planning', serviceVersion: 'test', instanceId: 'p-1', environment: 'test', metricsEndpoint: { bearerToken: '' }, log: silentLogger() });
    const svc = await start(config(), { log: silentLogger(), db: database.db, telemetry });
    try {
      const base = `http://127.0.0.1:${svc.ports.http}`;
      expect((await fetch(`${base}/api/v1/features`)).status).toBe(401);
      const res = await fetch(`${base}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="401",http_route="/api/v1/features"} 1\n');
      expect(text).toContain('target_info{deployment_environment_name="test",service_instance_id="p-1",service_name="planning"');
    } finally {
      await svc.stop();
      await telemetry.shutdown();
      await database.drop();
    }
  });
});
