import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLES } from '@floe/schema';
import { runFloeCli, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Table provisioning (spec 2, "Tables provisioned per dataset" and provisioning rules): at dataset
 * creation, by the writer's reconcile pass, and on demand; the tables listing; who may call it;
 * the CLI. Both modes, real processes.
 */
const ALL = Object.keys(TABLES).sort();

interface Listing {
  tables: Array<{ name: string; dataset: string; full_name: string; type: string | null }>;
  datasets: Array<{ dataset: string; tables: Array<{ name: string; type: string | null }> }>;
}

describe.each<FloeMode>(['embedded', 'cluster'])('table provisioning (%s)', (mode) => {
  let floe: FloeUnderTest;
  let acmeKey: string;
  let globexKey: string;

  beforeAll(async () => {
    floe = await startFloe({ mode, config: { writer: { table_reconcile_interval: '300ms' } } });
    acmeKey = (await floe.bootstrap('acme')).api_key;
    globexKey = (await floe.bootstrap('globex')).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  async function api<T = Listing>(method: string, path: string, key?: string, body?: unknown): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = {};
    if (key) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${floe.routerUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: (text === '' ? undefined : JSON.parse(text)) as T };
  }
  const names = (l: Listing, dataset: string) => l.datasets.find((d) => d.dataset === dataset)?.tables.map((t) => t.name).sort();

  it('provisions a new dataset at creation, and the listing shows exactly what exists', async () => {
    const created = await api('POST', '/api/v1/tenants/acme/datasets', acmeKey, { id: 'prod' });
    expect(created.status).toBe(201);
    const listing = await api('GET', '/api/v1/tenants/acme/tables', acmeKey);
    expect(listing.status).toBe(200);
    expect(names(listing.body, 'prod')).toEqual(ALL);
    expect(listing.body.tables.filter((t) => t.dataset === 'prod').map((t) => t.full_name).sort()).toEqual(ALL.map((t) => `acme.prod.${t}`));
    // Every provisioned table is a Floe table, of the kind its name says, flat and per dataset alike.
    expect(listing.body.tables.every((t) => t.type === t.name)).toBe(true);
    expect(listing.body.datasets.find((d) => d.dataset === 'prod')?.tables.map((t) => t.type).sort()).toEqual(ALL);
  });

  it("the writer's reconcile pass provisions every dataset of the registry, the default one included", async () => {
    // A dataset that appears in the registry without the API (and without its tables).
    await floe.metaQuery(`INSERT INTO datasets (tenant_id, id, is_default) VALUES ('globex', 'quiet', false)`);
    const listing = await waitFor('reconciled tables', async () => {
      const l = await api('GET', '/api/v1/tenants/globex/tables', globexKey);
      return names(l.body, 'quiet')?.length === ALL.length && names(l.body, 'default')?.length === ALL.length ? l.body : undefined;
    }, 20_000, 200);
    expect(listing.datasets.map((d) => d.dataset).sort()).toEqual(['default', 'quiet']);
  });

  it('tables/create provisions on demand, narrowed by the tenant’s own schema block', async () => {
    // Every signal off for this tenant: its datasets exist with nothing provisioned.
    const off = { traces_enabled: false, logs_enabled: false, metrics_enabled: false, profiles_enabled: false };
    const t = await api('POST', '/api/v1/tenants', floe.adminApiKey, { id: 'narrow', settings: { schema: off } });
    expect(t.status).toBe(201);
    const key = (await floe.bootstrap('narrow')).api_key;
    await floe.metaQuery(`INSERT INTO datasets (tenant_id, id, is_default) VALUES ('narrow', 'extra', false)`);
    const before = await api('GET', '/api/v1/tenants/narrow/tables', key);
    expect(before.status).toBe(200);
    expect(before.body).toEqual({ tables: [], datasets: [{ dataset: 'default', tables: [] }, { dataset: 'extra', tables: [] }] });
    // Every signal but traces on again.
    const patched = await api('PATCH', '/api/v1/tenants/narrow', floe.adminApiKey, { settings: { schema: { traces_enabled: false } } });
    expect(patched.status).toBe(200);
    const made = await api<Listing & { provisioned: Array<{ dataset: string; table: string; outcome: string }> }>('POST', '/api/v1/tenants/narrow/tables/create', key);
    expect(made.status).toBe(201);
    const expected = ALL.filter((n) => n !== 'traces');
    expect(names(made.body, 'extra')).toEqual(expected);
    expect(names(made.body, 'default')).toEqual(expected);
    expect(made.body.provisioned.filter((p) => p.table === 'traces')).toEqual([]);
    // Right after tables/create the listing reflects exactly what was created.
    const after = await api('GET', '/api/v1/tenants/narrow/tables', key);
    expect(after.body.tables).toEqual(made.body.tables);
  });

  it('any valid key of the tenant may list and provision; another tenant’s key may not', async () => {
    const ingestOnly = await api<{ secret: string }>('POST', '/api/v1/tenants/acme/api-keys', acmeKey, { scopes: ['ingest'], name: 'collector' });
    expect(ingestOnly.status).toBe(201);
    expect((await api('GET', '/api/v1/tenants/acme/tables', ingestOnly.body.secret)).status).toBe(200);
    expect((await api('POST', '/api/v1/tenants/acme/tables/create', ingestOnly.body.secret)).status).toBe(201);
    const wrong = await api<{ status: string; errorType: string }>('GET', '/api/v1/tenants/acme/tables', globexKey);
    expect(wrong.status).toBe(403);
    expect(wrong.body).toMatchObject({ status: 'error', errorType: 'forbidden' });
    expect((await api('POST', '/api/v1/tenants/acme/tables/create', globexKey)).status).toBe(403);
    expect((await api('GET', '/api/v1/tenants/acme/tables')).status).toBe(401);
    // A tenant the listing cannot resolve has no datasets; only the refusals above depend on who asks.
    const unknown = await api('GET', '/api/v1/tenants/nobody/tables', floe.adminApiKey);
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual({ tables: [], datasets: [] });
    expect((await api('GET', '/api/v1/tenants/nobody/tables', globexKey)).status).toBe(403);
    expect((await api('GET', '/api/v1/tenants/nobody/tables')).status).toBe(401);
  });

  it('floe tenant table list|provision, human and --json', async () => {
    const env = { FLOE_URL: floe.routerUrl, FLOE_API_KEY: acmeKey, FLOE_TENANT: 'acme' };
    const json = await runFloeCli(['tenant', 'table', 'list', '--json'], env);
    expect(json.code).toBe(0);
    expect(names(JSON.parse(json.stdout) as Listing, 'prod')).toEqual(ALL);
    const human = await runFloeCli(['tenant', 'table', 'list', 'acme'], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/dataset\s*\|\s*name\s*\|\s*full_name/);
    expect(human.stdout).toContain('acme.prod.traces');
    const provision = await runFloeCli(['tenant', 'table', 'provision', '--json'], env);
    expect(provision.code).toBe(0);
    const body = JSON.parse(provision.stdout) as { provisioned: Array<{ outcome: string }> };
    expect(body.provisioned.length).toBeGreaterThan(0);
    expect(body.provisioned.every((p) => p.outcome === 'existing')).toBe(true);
  });
});
