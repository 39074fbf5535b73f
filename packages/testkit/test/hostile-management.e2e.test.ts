import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PprofProfileSchema,
  PyroSelectMergeProfileRequestSchema,
  PyroSelectSeriesRequestSchema,
  PyroSelectSeriesResponseSchema,
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type MessageInitShape,
} from '@floe/proto';
import { postProfiles, sampleProfilesRequest, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * The management API and the profile query API against a hostile or careless client (spec 2,
 * Management and operations, Authentication; spec 1, Profile query API, Errors): text the
 * metadata DB cannot store, prototype keys, a dataset-bound key reaching a sibling dataset,
 * concurrent creates of one name, a tenant deleted while in use, another tenant's ids in the
 * path, and Connect requests with absurd windows and steps. Every answer is checked by status and
 * envelope, and what was (not) stored is read back. Embedded mode: nothing here is cluster-only.
 */

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const MS = 1_000_000;
const INT64_MAX = 2n ** 63n - 1n;
const SERVICE_PATH = '/profilequery/querier.v1.QuerierService';

interface Res<T = any> {
  status: number;
  body: T;
}
interface Call {
  key?: string;
  tenant?: string;
  /** Sent as written (JSON text that JSON.stringify could not produce, such as a lone surrogate escape). */
  raw?: string;
  body?: unknown;
}

describe('management and profile query APIs against hostile clients (embedded)', () => {
  let floe: FloeUnderTest;
  let admin: string;
  /** tenant:manage key of acme, which holds one CPU profile of 65 ms. */
  let acmeKey: string;
  let globexKey: string;
  let nowMs: number;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    admin = floe.adminApiKey;
    acmeKey = (await floe.bootstrap('acme')).api_key;
    globexKey = (await floe.bootstrap('globex')).api_key;
    nowMs = Date.now();
    const sent = await postProfiles(floe.otlpHttpUrl, { apiKey: acmeKey, tenant: 'acme' }, sampleProfilesRequest('hostile-svc', { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8) }, BigInt(nowMs) * 1_000_000n));
    expect(sent.status).toBe(200);
  });
  afterAll(async () => {
    await floe?.stop();
  });

  async function api<T = any>(method: string, path: string, c: Call = {}): Promise<Res<T>> {
    const headers: Record<string, string> = {};
    if (c.key) headers.authorization = `Bearer ${c.key}`;
    if (c.tenant) headers['x-tenant-id'] = c.tenant;
    const body = c.raw ?? (c.body === undefined ? undefined : JSON.stringify(c.body));
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${floe.routerUrl}${path}`, { method, headers, body });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
  }

  const envelope = (errorType: string, error?: string | RegExp) => ({ status: 'error', errorType, error: error === undefined ? expect.any(String) : typeof error === 'string' ? error : expect.stringMatching(error) });

  describe('management', () => {
    it('text the metadata DB cannot store (NUL, lone surrogates) is 400 naming the field, never a 500 or a silently changed row', async () => {
      const nul = 'contains a NUL character (U+0000)';
      const lone = 'contains a lone UTF-16 surrogate (not valid Unicode)';
      const cases: Array<[string, string, Call, string]> = [
        ['POST', '/api/v1/tenants', { key: admin, body: { id: 'nul1', settings: { note: 'a\u0000b' } } }, `body.settings.note ${nul}`],
        ['POST', '/api/v1/tenants', { key: admin, body: { id: 'nul2', settings: { 'k\u0000': 1 } } }, `a key of body.settings ${nul}`],
        ['POST', '/api/v1/tenants', { key: admin, raw: '{"id":"lone1","display_name":"a\\ud800b"}' }, `body.display_name ${lone}`],
        ['PATCH', '/api/v1/tenants/acme', { key: acmeKey, body: { settings: { note: '\u0000' } } }, `body.settings.note ${nul}`],
        ['POST', '/api/v1/users', { key: admin, body: { email: 'a\u0000@example.com' } }, `body.email ${nul}`],
        ['POST', '/api/v1/users', { key: admin, raw: '{"email":"\\udc00@example.com"}' }, `body.email ${lone}`],
        ['POST', '/api/v1/tenants/acme/memberships', { key: acmeKey, body: { email: 'x\u0000@example.com', role: 'viewer' } }, `body.email ${nul}`],
        ['POST', '/api/v1/tenants/acme/api-keys', { key: acmeKey, raw: '{"scopes":["query"],"name":"\\ud800"}' }, `body.name ${lone}`],
        ['POST', '/api/v1/schema/registries', { key: acmeKey, body: { id: 'nulreg', name: 'a\u0000' } }, `body.name ${nul}`],
        ['POST', '/api/v1/schema/registries', { key: acmeKey, body: { id: 'nulreg', name: 'x', attributes: [{ key: 'a.b', type: 'string', examples: ['ok', '\u0000'] }] } }, `body.attributes[0].examples[1] ${nul}`],
        ['GET', '/api/v1/schema/attributes/a%00b', { key: acmeKey }, `params.key ${nul}`],
        ['GET', '/api/v1/schema/attributes?prefix=%00', { key: acmeKey }, `querystring.prefix ${nul}`],
      ];
      for (const [method, path, call, error] of cases) {
        const r = await api(method, path, call);
        expect({ method, path, status: r.status, body: r.body }).toEqual({ method, path, status: 400, body: envelope('bad_data', error) });
      }
      // Nothing of it was stored.
      for (const id of ['nul1', 'nul2', 'lone1']) expect((await api('GET', `/api/v1/tenants/${id}`, { key: admin })).status).toBe(404);
      const users = await api<{ users: Array<{ email: string }> }>('GET', '/api/v1/users', { key: admin });
      expect(users.body.users.filter((u) => u.email.endsWith('@example.com'))).toEqual([]);
      expect((await api('GET', '/api/v1/schema/registries', { key: acmeKey })).body).toEqual({ registries: [] });
      expect((await api('GET', '/api/v1/tenants/acme', { key: acmeKey })).body.settings).not.toHaveProperty('note');
      const keys = await api<{ api_keys: Array<{ name: string }> }>('GET', '/api/v1/tenants/acme/api-keys', { key: acmeKey });
      expect(keys.body.api_keys.map((k) => k.name)).not.toContain('\ufffd');
      // Unicode the DB does store goes through unchanged: a surrogate pair, a confusable, SQL metacharacters.
      const fine = await api('POST', '/api/v1/tenants', { key: admin, body: { id: 'unicode-ok', display_name: "😀 аcme'; DROP TABLE tenants; --" } });
      expect(fine).toMatchObject({ status: 201, body: { id: 'unicode-ok', display_name: "😀 аcme'; DROP TABLE tenants; --" } });
      expect((await api('GET', '/api/v1/tenants/unicode-ok', { key: admin })).body.display_name).toBe("😀 аcme'; DROP TABLE tenants; --");
    });

    it('a __proto__ key anywhere in a body is 400 and leaves the settings as they were', async () => {
      const before = (await api('GET', '/api/v1/tenants/acme', { key: admin })).body.settings;
      for (const raw of ['{"settings":{"__proto__":{"limits":{"max_storage_bytes":5}}}}', '{"settings":{"a":[{"__proto__":{}}]}}']) {
        const r = await api('PATCH', '/api/v1/tenants/acme', { key: acmeKey, raw });
        expect({ raw, ...r }).toEqual({ raw, status: 400, body: envelope('bad_data', /has the key "__proto__", which is not allowed$/) });
      }
      const created = await api('POST', '/api/v1/tenants', { key: admin, raw: '{"id":"proto1","settings":{"__proto__":{"x":1}}}' });
      expect(created).toEqual({ status: 400, body: envelope('bad_data', 'body.settings has the key "__proto__", which is not allowed') });
      expect((await api('GET', '/api/v1/tenants/acme', { key: admin })).body.settings).toEqual(before);
      expect((await api('GET', '/api/v1/tenants/proto1', { key: admin })).status).toBe(404);
    });

    it('a number JSON can only read as Infinity is 400, not stored as null', async () => {
      const settings = await api('PATCH', '/api/v1/tenants/acme', { key: acmeKey, raw: '{"settings":{"ratio":1e400}}' });
      expect(settings).toEqual({ status: 400, body: envelope('bad_data', 'body.settings.ratio is a number beyond what a double holds') });
      const registry = await api('POST', '/api/v1/schema/registries', { key: acmeKey, raw: '{"id":"inf","name":"x","attributes":[{"key":"a.b","type":"double","examples":[1e400]}]}' });
      expect(registry).toEqual({ status: 400, body: envelope('bad_data', 'body.attributes[0].examples[0] is a number beyond what a double holds') });
      expect((await api('GET', '/api/v1/schema/registries/inf', { key: acmeKey })).status).toBe(404);
      expect((await api('GET', '/api/v1/tenants/acme', { key: acmeKey })).body.settings).not.toHaveProperty('ratio');
    });

    it('a retention that is no whole number of milliseconds is 400, and the usage API keeps answering', async () => {
      expect((await api('POST', '/api/v1/tenants/acme/tables/create', { key: acmeKey })).status).toBe(201);
      for (const [retention, byTable] of [['9999999999999999999999h', '1d'], ['30d', '1.5ms']]) {
        const r = await api('PATCH', '/api/v1/tenants/acme', { key: admin, body: { settings: { limits: { retention, retention_by_table: { logs: byTable } } } } });
        expect({ retention, byTable, ...r }).toEqual({ retention, byTable, status: 400, body: envelope('bad_data', /not a duration/) });
      }
      const usage = await api('GET', '/api/v1/tenants/acme/usage', { key: acmeKey });
      expect(usage.status).toBe(200);
      expect(usage.body.tables.length).toBeGreaterThan(0);
      expect(usage.body.tables.every((t: { retention_ms: number | null }) => t.retention_ms === null)).toBe(true);
    });

    it('a dataset-bound key reads the attribute statistics of its own dataset only, as the /schema routes', async () => {
      for (const id of ['bound-own', 'bound-sibling']) expect((await api('POST', '/api/v1/tenants/acme/datasets', { key: acmeKey, body: { id } })).status).toBe(201);
      const created = await api('POST', '/api/v1/tenants/acme/api-keys', { key: acmeKey, body: { scopes: ['query', 'tenant:manage'], dataset_id: 'bound-own' } });
      expect(created.status).toBe(201);
      const bound = created.body.secret as string;
      expect(await api('GET', '/api/v1/tenants/acme/datasets/bound-own/attribute-stats', { key: bound })).toEqual({ status: 200, body: { query_demand: [], type_mismatches: [] } });
      for (const dataset of ['bound-sibling', 'default']) {
        const r = await api('GET', `/api/v1/tenants/acme/datasets/${dataset}/attribute-stats`, { key: bound });
        expect(r).toEqual({ status: 403, body: envelope('forbidden', `API key is not valid for dataset ${dataset}`) });
        expect(await api('GET', `/api/v1/schema/attributes/http.method?dataset=${dataset}`, { key: bound })).toEqual({ status: 403, body: envelope('forbidden', `API key is not valid for dataset ${dataset}`) });
      }
      // A tenant-wide key still reads every dataset's.
      expect((await api('GET', '/api/v1/tenants/acme/datasets/bound-sibling/attribute-stats', { key: acmeKey })).status).toBe(200);
    });

    it('an X-Tenant-ID that is no tenant name is 400 on the /schema routes, not an empty answer', async () => {
      for (const tenant of ['../acme', 'ACME', 'a b']) {
        const r = await api('GET', '/api/v1/schema/registries', { key: admin, tenant });
        expect({ tenant, ...r }).toEqual({ tenant, status: 400, body: envelope('bad_data', 'invalid X-Tenant-ID') });
      }
      expect(await api('GET', '/api/v1/schema/registries', { key: admin, tenant: 'acme' })).toEqual({ status: 200, body: { registries: [] } });
    });

    it('concurrent creates of one name: exactly one 201, the others 409 in the envelope, never a 500', async () => {
      const races: Array<[string, string, Call]> = [
        ['POST', '/api/v1/tenants', { key: admin, body: { id: 'race-tenant' } }],
        ['POST', '/api/v1/tenants/acme/datasets', { key: acmeKey, body: { id: 'race-dataset' } }],
        ['POST', '/api/v1/users', { key: admin, body: { email: 'race@floe.test' } }],
        ['POST', '/api/v1/schema/registries', { key: acmeKey, body: { id: 'race-registry', name: 'race' } }],
      ];
      for (const [method, path, call] of races) {
        const answers = await Promise.all(Array.from({ length: 6 }, () => api(method, path, call)));
        expect({ path, statuses: answers.map((a) => a.status).sort() }).toEqual({ path, statuses: [201, 409, 409, 409, 409, 409] });
        for (const a of answers.filter((x) => x.status === 409)) expect(a.body).toEqual(envelope('conflict'));
      }
      const datasets = await api<{ datasets: Array<{ id: string }> }>('GET', '/api/v1/tenants/acme/datasets', { key: acmeKey });
      expect(datasets.body.datasets.filter((d) => d.id === 'race-dataset')).toHaveLength(1);
    });

    it('a tenant deleted while requests use it: each answers 204/201/200 or 404 in the envelope, and nothing of it is left', async () => {
      expect((await api('POST', '/api/v1/tenants', { key: admin, body: { id: 'doomed' } })).status).toBe(201);
      const answers = await Promise.all([
        api('DELETE', '/api/v1/tenants/doomed', { key: admin }),
        api('POST', '/api/v1/tenants/doomed/datasets', { key: admin, body: { id: 'late' } }),
        api('POST', '/api/v1/tenants/doomed/api-keys', { key: admin, body: { scopes: ['query'] } }),
        api('POST', '/api/v1/schema/registries', { key: admin, tenant: 'doomed', body: { id: 'late', name: 'late' } }),
        api('PATCH', '/api/v1/tenants/doomed', { key: admin, body: { display_name: 'late' } }),
        api('POST', '/api/v1/tenants/doomed/tables/create', { key: admin }),
      ]);
      for (const a of answers) {
        expect(a.status).toBeLessThan(500);
        if (a.status >= 400) expect({ status: a.status, body: a.body }).toEqual({ status: 404, body: envelope('not_found') });
      }
      expect(answers[0]!.status).toBe(204);
      // Whatever raced in went with the tenant, or was refused.
      expect((await api('GET', '/api/v1/tenants/doomed', { key: admin })).status).toBe(404);
      expect((await api('GET', '/api/v1/tenants/doomed/api-keys', { key: admin })).status).toBe(404);
      expect((await api('GET', '/api/v1/schema/registries', { key: admin, tenant: 'doomed' })).body).toEqual({ registries: [] });
    });

    it('bootstrap of an id whose tables outlived its tenant is refused (409) as tenant creation is: a new tenant never inherits them', async () => {
      const key = (await floe.bootstrap('ghost')).api_key;
      expect((await api('POST', '/api/v1/tenants/ghost/tables/create', { key })).status).toBe(201);
      // As if the purge of a deleted tenant had failed: the row is gone, its tables are not.
      await floe.metaQuery('DELETE FROM tenants WHERE id = $1', ['ghost']);
      const refused = await api('POST', '/api/v1/admin/bootstrap', { key: admin, body: { tenant: 'ghost' } });
      expect(refused).toEqual({ status: 409, body: envelope('conflict', /^tenant id ghost still holds \d+ table\(s\) of a deleted tenant \(ghost\.default\..*DELETE \/api\/v1\/tenants\/ghost removes them$/) });
      expect((await api('GET', '/api/v1/tenants/ghost', { key: admin })).status).toBe(404);
      expect(await floe.metaQuery('SELECT id FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL', ['ghost'])).toHaveLength(0);

      expect((await api('DELETE', '/api/v1/tenants/ghost', { key: admin })).status).toBe(204);
      expect((await api('POST', '/api/v1/admin/bootstrap', { key: admin, body: { tenant: 'ghost' } })).status).toBe(201);
      expect((await api('GET', '/api/v1/tenants/ghost/tables', { key: admin })).body.tables).toEqual([]);
    });

    it("another tenant's key ids in acme's paths are 404 and change nothing; a tenant admin cannot reach globex", async () => {
      const g = await api('POST', '/api/v1/tenants/globex/api-keys', { key: globexKey, body: { name: 'globex-only', scopes: ['query'] } });
      expect(g.status).toBe(201);
      const id = g.body.id as string;
      const notInAcme = envelope('not_found', `api key ${id} not found in tenant acme`);
      expect(await api('GET', `/api/v1/tenants/acme/api-keys/${id}`, { key: acmeKey })).toEqual({ status: 404, body: notInAcme });
      expect(await api('PATCH', `/api/v1/tenants/acme/api-keys/${id}`, { key: acmeKey, body: { scopes: ['query', 'ingest', 'tenant:manage'] } })).toEqual({ status: 404, body: notInAcme });
      expect(await api('DELETE', `/api/v1/tenants/acme/api-keys/${id}`, { key: acmeKey })).toEqual({ status: 404, body: notInAcme });
      expect(await api('GET', `/api/v1/tenants/globex/api-keys/${id}`, { key: globexKey })).toMatchObject({ status: 200, body: { scopes: ['query'], revoked_at: null } });
      for (const [method, path, body] of [
        ['POST', '/api/v1/tenants/globex/api-keys', { scopes: ['query'] }],
        ['GET', '/api/v1/tenants/globex/datasets', undefined],
        ['GET', '/api/v1/tenants/globex/memberships', undefined],
        ['GET', '/api/v1/tenants/globex/usage', undefined],
      ] as const) {
        expect({ path, ...(await api(method, path, { key: acmeKey, body })) }).toEqual({ path, status: 403, body: envelope('forbidden', 'no access to tenant globex') });
      }
    });
  });

  describe('profile query (Connect, binary protobuf)', () => {
    async function connect<I extends DescMessage>(method: string, input: I, init: MessageInitShape<I>): Promise<{ status: number; body: Buffer }> {
      const res = await fetch(`${floe.routerUrl}${SERVICE_PATH}/${method}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acmeKey}`, 'x-tenant-id': 'acme', 'content-type': 'application/proto', 'connect-protocol-version': '1' },
        body: toBinary(input, create(input, init)),
      });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    }
    const window = () => ({ start: BigInt(nowMs - 60_000), end: BigInt(nowMs + 60_000) });

    beforeAll(async () => {
      await waitFor(
        'the CPU profile to be queryable',
        async () => {
          const r = await connect('SelectSeries', PyroSelectSeriesRequestSchema, { profileTypeID: CPU, labelSelector: '{}', step: 15, ...window() });
          const series = r.status === 200 ? fromBinary(PyroSelectSeriesResponseSchema, r.body).series : [];
          return series.some((s) => s.points.some((p) => p.value > 0)) ? true : undefined;
        },
        60_000,
        250,
      );
    });

    it('SelectSeries with a step longer than the window, up to 1e300 s: one point at the window’s end holding the whole profile', async () => {
      for (const step of [3600, 1e12, 1e300]) {
        const r = await connect('SelectSeries', PyroSelectSeriesRequestSchema, { profileTypeID: CPU, labelSelector: '{}', step, ...window() });
        expect({ step, status: r.status }).toEqual({ step, status: 200 });
        const points = fromBinary(PyroSelectSeriesResponseSchema, r.body).series.flatMap((s) => s.points);
        expect(points.map((p) => ({ value: p.value, timestamp: p.timestamp }))).toEqual([{ value: 65 * MS, timestamp: window().end }]);
      }
    });

    it('windows beyond the int64 nanoseconds profiles have (unix ms up to int64) answer 200 with the profile and int64 fields in range', async () => {
      const whole = { start: -(2n ** 63n), end: INT64_MAX };
      const merged = await connect('SelectMergeProfile', PyroSelectMergeProfileRequestSchema, { profileTypeID: CPU, labelSelector: '{}', ...whole });
      expect(merged.status).toBe(200);
      const profile = fromBinary(PprofProfileSchema, merged.body);
      expect(profile.sample.reduce((a, s) => a + s.value[0]!, 0n)).toBe(BigInt(65 * MS));
      expect(profile.durationNanos).toBe(INT64_MAX);
      const series = await connect('SelectSeries', PyroSelectSeriesRequestSchema, { profileTypeID: CPU, labelSelector: '{}', step: 15, ...whole });
      expect(series.status).toBe(200);
      expect(fromBinary(PyroSelectSeriesResponseSchema, series.body).series.flatMap((s) => s.points).reduce((a, p) => a + p.value, 0)).toBe(65 * MS);
    });

    it('legacy render over a window past int64 nanoseconds (ten 9s of unix seconds, now-300y) is 200 with the profile', async () => {
      for (const [from, until] of [['0', '9999999999'], ['now-300y', '9999999999999999999']] as const) {
        const qs = new URLSearchParams({ query: CPU, from, until }).toString();
        const res = await fetch(`${floe.routerUrl}/profilequery/render?${qs}`, { headers: { authorization: `Bearer ${acmeKey}`, 'x-tenant-id': 'acme' } });
        expect({ from, until, status: res.status }).toEqual({ from, until, status: 200 });
        expect(((await res.json()) as { flamebearer: { numTicks: number } }).flamebearer.numTicks).toBe(65 * MS);
      }
    });
  });
});
