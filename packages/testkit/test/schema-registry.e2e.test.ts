import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Schemas and the schema registry (spec 2, Management and operations), against an embedded Floe
 * (PGlite): tenant and available schemas, registry CRUD with validation, attribute resolution with
 * the pin and off-type count that ingest produces, prefix search, tenant isolation and roles.
 */

interface Res<T = any> {
  status: number;
  body: T;
}

type Value = { stringValue: string } | { intValue: string };
const attrs = (o: Record<string, Value>) => Object.entries(o).map(([key, value]) => ({ key, value }));

describe('schema registry (embedded)', () => {
  let floe: FloeUnderTest;
  /** tenant:manage keys (tenant admins). */
  let acme: string;
  let globex: string;
  /** A key of acme without tenant:manage: reads only. */
  let acmeReader: string;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    acme = (await floe.bootstrap('acme')).api_key;
    globex = (await floe.bootstrap('globex')).api_key;
    const created = await api('POST', '/api/v1/tenants/acme/api-keys', acme, { name: 'reader', scopes: ['query'] });
    expect(created.status).toBe(201);
    acmeReader = created.body.secret;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  async function api<T = any>(method: string, path: string, key?: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res<T>> {
    const h: Record<string, string> = { ...headers };
    if (key) h.authorization = `Bearer ${key}`;
    if (body !== undefined) h['content-type'] = 'application/json';
    const res = await fetch(`${floe.routerUrl}${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
  }

  const http = {
    name: 'HTTP',
    attributes: [
      { key: 'http.request.method', type: 'string', brief: 'HTTP request method.', examples: ['GET', 'POST'], requirement_level: 'required' },
      { key: 'http.response.status_code', type: 'int', examples: [200] },
      { key: 'retry.count', type: 'int', brief: 'Retries so far.' },
      { key: 'k8s.pod.uid', type: 'string' },
    ],
    entities: [{ type: 'k8s.pod', identifying_attributes: ['k8s.pod.uid'] }],
    metrics: [{ name: 'http.server.request.duration', instrument: 'histogram', unit: 's', attributes: ['http.request.method', 'http.response.status_code'] }],
  };

  it('lists available schemas and the tenant’s, narrowed by its schema block', async () => {
    const available = await api('GET', '/api/v1/schemas/available', acme);
    expect(available.status).toBe(200);
    expect(available.body).toEqual({
      schemas: [
        { signal: 'traces', tables: ['traces'], enabled_by_default: true },
        { signal: 'logs', tables: ['logs'], enabled_by_default: true },
        { signal: 'metrics', tables: ['metrics', 'metric_exemplars'], enabled_by_default: true },
        { signal: 'profiles', tables: ['profiles'], enabled_by_default: true },
      ],
      custom_schemas: [],
    });
    const patched = await api('PATCH', '/api/v1/tenants/globex', floe.adminApiKey, { settings: { schema: { profiles_enabled: false } } });
    expect(patched.status).toBe(200);
    const own = await api('GET', '/api/v1/tenants/globex/schemas', globex);
    expect(own.status).toBe(200);
    expect(own.body.schemas.map((s: any) => [s.signal, s.enabled, s.disabled_by_tenant])).toEqual([
      ['traces', true, false],
      ['logs', true, false],
      ['metrics', true, false],
      ['profiles', false, true],
    ]);
    expect((await api('GET', '/api/v1/tenants/globex/schemas', acme)).status).toBe(403);
  });

  it('creates, reads, lists, replaces and deletes a registry; a reader key may read but not write', async () => {
    const created = await api('POST', '/api/v1/schema/registries', acme, { id: 'http', ...http });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: 'http', tenant_id: 'acme', name: 'HTTP', attributes: http.attributes, entities: http.entities, metrics: http.metrics, created_by: expect.stringMatching(/^key:/) });
    expect((await api('POST', '/api/v1/schema/registries', acme, { id: 'http', name: 'again' })).status).toBe(409);

    const read = await api('GET', '/api/v1/schema/registries/http', acmeReader);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
    expect((await api('GET', '/api/v1/schema/registries', acmeReader)).body.registries.map((r: any) => r.id)).toEqual(['http']);

    const denied = await api('POST', '/api/v1/schema/registries', acmeReader, { id: 'mine', name: 'Mine' });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ status: 'error', errorType: 'forbidden' });
    expect((await api('PUT', '/api/v1/schema/registries/http', acmeReader, http)).status).toBe(403);
    expect((await api('DELETE', '/api/v1/schema/registries/http', acmeReader)).status).toBe(403);

    const scratch = await api('POST', '/api/v1/schema/registries', acme, { id: 'scratch', name: 'Scratch', attributes: [{ key: 'app.tier', type: 'string' }] });
    expect(scratch.status).toBe(201);
    const replaced = await api('PUT', '/api/v1/schema/registries/scratch', acme, { name: 'Scratch 2', attributes: [{ key: 'app.tier', type: 'string' }, { key: 'app.shard', type: 'int' }] });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ name: 'Scratch 2', attributes: [{ key: 'app.tier' }, { key: 'app.shard' }], entities: [], metrics: [] });
    expect((await api('DELETE', '/api/v1/schema/registries/scratch', acme)).status).toBe(204);
    expect((await api('GET', '/api/v1/schema/registries/scratch', acme)).status).toBe(404);
    expect((await api('PUT', '/api/v1/schema/registries/scratch', acme, { name: 'gone' })).status).toBe(404);
  });

  it('refuses a document with problems, and :validate lists them without storing anything', async () => {
    const bad = { id: 'bad', name: 'Bad', attributes: [{ key: 'retry.count', type: 'string' }, { key: 'x.y', type: 'int', examples: ['one'] }], metrics: [{ name: 'm', instrument: 'counter', unit: '1', attributes: ['missing.key'] }] };
    const refused = await api('POST', '/api/v1/schema/registries', acme, bad);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/retry\.count is already defined in registry http/);

    const checked = await api('POST', '/api/v1/schema/registries:validate', acmeReader, { registry: bad });
    expect(checked.status).toBe(200);
    expect(checked.body).toEqual({
      valid: false,
      problems: [
        { path: 'registry.attributes[0].key', severity: 'error', message: 'attribute retry.count is already defined in registry http' },
        { path: 'registry.attributes[1].examples[0]', severity: 'error', message: 'example "one" is not of type int' },
        { path: 'registry.metrics[0].attributes[0]', severity: 'error', message: 'attribute missing.key is not defined in this or another registry of the tenant' },
      ],
    });
    // Re-validating the stored registry under its own id is clean: it does not conflict with itself.
    expect((await api('POST', '/api/v1/schema/registries:validate', acme, { registry: { id: 'http', ...http } })).body).toEqual({ valid: true, problems: [] });

    const sample = await api('POST', '/api/v1/schema/registries:validate', acme, { attributes: { 'http.request.method': 'GET', 'http.response.status_code': '200', 'user.id': 'u1' } });
    expect(sample.body).toEqual({
      valid: false,
      problems: [
        { path: 'attributes["http.response.status_code"]', severity: 'error', message: 'attribute http.response.status_code is int in registry http; got "200"' },
        { path: 'attributes["user.id"]', severity: 'warning', message: 'attribute user.id is not defined in any registry of the tenant' },
      ],
    });
    expect((await api('POST', '/api/v1/schema/registries:validate', acme, { registry: { id: 'x', name: 'X', attributes: [{ key: 'a', type: 'uuid' }] } })).status).toBe(400);
    expect((await api('GET', '/api/v1/schema/registries/bad', acme)).status).toBe(404);
  });

  it('resolves an attribute: definition, pinned type and off_type_count after a value of another type', async () => {
    const send = async (value: Value) => {
      const res = await fetch(`${floe.otlpHttpUrl}/v1/logs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acme}`, 'x-tenant-id': 'acme', 'content-type': 'application/json' },
        body: JSON.stringify({
          resourceLogs: [{ resource: { attributes: attrs({ 'service.name': { stringValue: 'schema-e2e' } }) }, scopeLogs: [{ logRecords: [{ timeUnixNano: `${BigInt(Date.now()) * 1_000_000n}`, body: { stringValue: 'x' }, attributes: attrs({ 'retry.count': value }) }] }] }],
        }),
      });
      expect(res.status).toBe(200);
    };
    await send({ intValue: '3' });
    await waitFor('the pin of retry.count', async () => ((await api('GET', '/api/v1/schema/attributes/retry.count', acme)).body?.pinned_type === 'int' ? true : undefined), 60_000, 200);
    await send({ stringValue: 'three' });
    const resolved = await waitFor('the off_type count of retry.count', async () => {
      const r = await api('GET', '/api/v1/schema/attributes/retry.count', acmeReader);
      return r.body?.off_type_count === 1 ? r.body : undefined;
    }, 60_000, 200);
    expect(resolved).toEqual({
      key: 'retry.count',
      dataset: 'default',
      definition: { registry_id: 'http', key: 'retry.count', type: 'int', brief: 'Retries so far.' },
      stored_type: 'int',
      pinned_type: 'int',
      pinned_at: expect.any(String),
      type_agrees: true,
      off_type_count: 1,
      pin_conflict_count: 0,
      mismatches: [{ table: 'logs', reason: 'off_type', count: 1, last_seen_at: expect.any(String) }],
    });
    // Seen but not defined: resolved from the pin alone.
    expect((await api('GET', '/api/v1/schema/attributes/service.name', acme)).body).toMatchObject({ definition: null, pinned_type: 'str', type_agrees: null });
    const unknown = await api('GET', '/api/v1/schema/attributes/no.such.key', acme);
    expect(unknown.status).toBe(404);
    expect((await api('GET', '/api/v1/schema/attributes/retry.count?dataset=nope', acme)).status).toBe(404);
  });

  it('searches attributes, entities and metrics by prefix', async () => {
    const https = await api('GET', '/api/v1/schema/attributes?prefix=http.', acme);
    expect(https.status).toBe(200);
    expect(https.body.attributes.map((a: any) => a.key)).toEqual(['http.request.method', 'http.response.status_code']);
    expect(https.body.truncated).toBe(false);
    const limited = await api('GET', '/api/v1/schema/attributes?limit=1', acme);
    expect(limited.body).toMatchObject({ attributes: [{ key: 'http.request.method' }], truncated: true });
    expect((await api('GET', '/api/v1/schema/entities?prefix=k8s.', acme)).body).toEqual({ entities: [{ type: 'k8s.pod', registry_id: 'http', identifying_attributes: ['k8s.pod.uid'] }], truncated: false });
    expect((await api('GET', '/api/v1/schema/metrics?prefix=http.server', acme)).body.metrics).toEqual([{ ...http.metrics[0], registry_id: 'http' }]);
    expect((await api('GET', '/api/v1/schema/metrics?prefix=db.', acme)).body).toEqual({ metrics: [], truncated: false });
  });

  it('isolates tenants: another tenant sees none of acme’s registries and cannot touch them', async () => {
    expect((await api('GET', '/api/v1/schema/registries', globex)).body).toEqual({ registries: [] });
    expect((await api('GET', '/api/v1/schema/registries/http', globex)).status).toBe(404);
    expect((await api('DELETE', '/api/v1/schema/registries/http', globex)).status).toBe(404);
    expect((await api('GET', '/api/v1/schema/attributes?prefix=http.', globex)).body).toEqual({ attributes: [], truncated: false });
    // Naming acme with globex's key is refused outright.
    expect((await api('GET', '/api/v1/schema/registries', globex, undefined, { 'x-tenant-id': 'acme' })).status).toBe(403);
    // The same id is free in another tenant.
    expect((await api('POST', '/api/v1/schema/registries', globex, { id: 'http', name: 'Globex HTTP', attributes: [{ key: 'retry.count', type: 'string' }] })).status).toBe(201);
    expect((await api('GET', '/api/v1/schema/registries/http', acme)).body.name).toBe('HTTP');
    // The break-glass key names its tenant; without one it is told to.
    expect((await api('GET', '/api/v1/schema/registries', floe.adminApiKey, undefined, { 'x-tenant-id': 'globex' })).body.registries.map((r: any) => r.name)).toEqual(['Globex HTTP']);
    expect((await api('GET', '/api/v1/schema/registries', floe.adminApiKey)).status).toBe(401);
  });
});
