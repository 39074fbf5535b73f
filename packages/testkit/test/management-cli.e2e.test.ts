import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts, runFloeCli, startFloe, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * `floe tenant|dataset|key|user` through the real CLI process against a running router, in both
 * modes: --json prints the router's response, the default is a table, errors go to stderr with
 * exit code 1. Each command's effect is checked in the metadata DB.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('management CLI (%s)', (mode) => {
  let floe: FloeUnderTest;
  let env: Record<string, string>;

  beforeAll(async () => {
    floe = await startFloe({ mode });
    // URL and key from the environment, as an operator's shell would have them.
    env = { FLOE_URL: floe.routerUrl, FLOE_API_KEY: floe.adminApiKey, FLOE_TENANT: '' };
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const floeCli = async (args: string[], extraEnv: Record<string, string> = {}, input?: string) => {
    const r = await runFloeCli(args, { ...env, ...extraEnv }, input);
    return r;
  };
  const json = async (args: string[], extraEnv: Record<string, string> = {}, input?: string) => {
    const r = await floeCli([...args, '--json'], extraEnv, input);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as any;
  };

  it('tenant create | list | get | delete', async () => {
    const created = await json(['tenant', 'create', 'umbrella', '--display-name', 'Umbrella Corp']);
    expect(created).toMatchObject({ id: 'umbrella', display_name: 'Umbrella Corp', default_dataset: 'default' });
    expect(await floe.metaQuery('SELECT display_name FROM tenants WHERE id = $1', ['umbrella'])).toEqual([{ display_name: 'Umbrella Corp' }]);

    const table = await floeCli(['tenant', 'list']);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^id\s+\| display_name\s+\| default_dataset \| disabled \| created_at/);
    expect(lines.some((l) => /^umbrella\s+\| Umbrella Corp/.test(l))).toBe(true);
    expect(lines.at(-1)).toMatch(/^\(\d+ rows?\)$/);

    expect((await json(['tenant', 'list'])).tenants.map((t: { id: string }) => t.id)).toContain('umbrella');
    expect(await json(['tenant', 'get', 'umbrella'])).toMatchObject({ id: 'umbrella' });

    const dup = await floeCli(['tenant', 'create', 'umbrella']);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toBe('floe tenant create: tenant umbrella already exists (HTTP 409 conflict)\n');

    const del = await floeCli(['tenant', 'delete', 'umbrella']);
    expect(del).toMatchObject({ code: 0, stdout: 'tenant umbrella deleted\n' });
    expect(await floe.metaQuery('SELECT id FROM tenants WHERE id = $1', ['umbrella'])).toEqual([]);
    const gone = await floeCli(['tenant', 'get', 'umbrella']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/HTTP 404 not_found/);
  });

  it('tenant limits shows, sets and unsets a tenant\'s overrides; a tenant\'s own key may only look', async () => {
    const { api_key: key } = await floe.bootstrap('limited');
    expect(await json(['tenant', 'limits', 'limited'])).toEqual({});
    const set = await json(['tenant', 'limits', 'limited', '--set', 'retention=30d', '--set', 'retention_by_table.traces=14d', '--set', 'max_storage_bytes=1e9']);
    expect(set).toEqual({ retention: '30d', retention_by_table: { traces: '14d' }, max_storage_bytes: 1e9 });
    expect(await floe.metaQuery("SELECT settings->'limits' AS limits FROM tenants WHERE id = $1", ['limited'])).toEqual([{ limits: set }]);

    const table = await floeCli(['tenant', 'limits', 'limited']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n').slice(2, 5).map((l) => l.replace(/\s+/g, ' ').trim())).toEqual(['max_storage_bytes | 1000000000', 'retention | 30d', 'retention_by_table.traces | 14d']);

    const bad = await floeCli(['tenant', 'limits', 'limited', '--set', 'retention=soon']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/settings\.limits\.retention: not a duration: "soon".*HTTP 400 bad_data/);
    expect((await floeCli(['tenant', 'limits', 'limited', '--set', 'retention'])).code).toBe(2);
    // A list is given as JSON.
    expect(await json(['tenant', 'limits', 'limited', '--set', 'metrics_generator_processors=["span_metrics"]'])).toEqual({ ...set, metrics_generator_processors: ['span_metrics'] });
    expect(await json(['tenant', 'limits', 'limited', '--unset', 'metrics_generator_processors'])).toEqual(set);

    // The tenant's own tenant:manage key reads its limits but may not raise them.
    expect(await json(['tenant', 'limits', 'limited'], { FLOE_API_KEY: key })).toEqual(set);
    const raise = await floeCli(['tenant', 'limits', 'limited', '--unset', 'max_storage_bytes'], { FLOE_API_KEY: key });
    expect(raise.code).toBe(1);
    expect(raise.stderr).toMatch(/tenant\.limits needs an instance admin \(HTTP 403 forbidden\)/);

    expect(await json(['tenant', 'limits', 'limited', '--unset', 'retention_by_table.traces', '--unset', 'max_storage_bytes'])).toEqual({ retention: '30d' });
    expect((await floeCli(['tenant', 'table', 'provision', 'limited'])).code).toBe(0);
    const usage = await floeCli(['tenant', 'usage', 'limited']);
    expect(usage.code).toBe(0);
    expect(usage.stdout).toMatch(/^dataset\s+\| table\s+\| rows \| files \| bytes \| retention/);
    expect(usage.stdout).toMatch(/\ndefault\s+\| traces\s+\| 0\s+\| 0\s+\| 0\s+\| 30d\s*\n/);
    expect(usage.stdout).toMatch(/\nstored 0 bytes of unlimited\n$/);
    expect(await json(['tenant', 'limits', 'limited', '--unset', 'retention'])).toEqual({});
    expect(await floe.metaQuery('SELECT settings FROM tenants WHERE id = $1', ['limited'])).toEqual([{ settings: {} }]);
  });

  it('dataset create | list with a tenant:manage key from --api-key', async () => {
    const { api_key: key } = await floe.bootstrap('wayne');
    const ds = await json(['dataset', 'create', 'gotham', '--tenant', 'wayne', '--api-key', key]);
    expect(ds).toMatchObject({ tenant_id: 'wayne', id: 'gotham', is_default: false });
    expect(await floe.metaQuery('SELECT id FROM datasets WHERE tenant_id = $1 ORDER BY id', ['wayne'])).toEqual([{ id: 'default' }, { id: 'gotham' }]);
    expect((await json(['dataset', 'list', '--tenant', 'wayne', '--api-key', key])).datasets.map((d: { id: string }) => d.id)).toEqual(['default', 'gotham']);
    const human = await floeCli(['dataset', 'list'], { FLOE_TENANT: 'wayne', FLOE_API_KEY: key });
    expect(human.stdout).toMatch(/^id\s+\| is_default \| created_at/);
    expect(human.stdout).toMatch(/\(2 rows\)\n$/);

    // The key of one tenant gets 403 on another.
    await floe.bootstrap('stark');
    const denied = await floeCli(['dataset', 'create', 'x', '--tenant', 'stark', '--api-key', key]);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/HTTP 403 forbidden/);
    const usage = await floeCli(['dataset', 'list']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe('floe dataset list: --tenant (or FLOE_TENANT) is required\n');
  });

  it('key create | list | revoke: the secret is printed once and stops working when revoked', async () => {
    await floe.bootstrap('oscorp');
    const created = await json(['key', 'create', '--tenant', 'oscorp', '--scopes', 'ingest,query', '--name', 'collector']);
    expect(created).toMatchObject({ tenant_id: 'oscorp', name: 'collector', scopes: ['ingest', 'query'] });
    expect(created.secret).toMatch(/^floe_/);
    const echo = () => fetch(`${floe.routerUrl}/tracequery/api/echo`, { headers: { authorization: `Bearer ${created.secret}`, 'x-tenant-id': 'oscorp' } });
    expect((await echo()).status).toBe(200);

    const human = await floeCli(['key', 'create', '--tenant', 'oscorp', '--scopes', 'ingest']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/\nsecret: floe_[0-9a-f]{16}_[A-Za-z0-9_-]{43}\n\(the secret is shown once; store it now\)\n$/);

    const listed = await json(['key', 'list', '--tenant', 'oscorp']);
    expect(listed.api_keys.map((k: { id: string }) => k.id)).toContain(created.id);
    expect(JSON.stringify(listed)).not.toContain(created.secret);

    const revoked = await json(['key', 'revoke', created.id, '--tenant', 'oscorp']);
    expect(revoked.revoked_at).toEqual(expect.any(String));
    expect((await echo()).status).toBe(401);
    expect((await json(['key', 'list', '--tenant', 'oscorp'])).api_keys.map((k: { id: string }) => k.id)).not.toContain(created.id);
    expect((await json(['key', 'list', '--tenant', 'oscorp', '--all'])).api_keys.map((k: { id: string }) => k.id)).toContain(created.id);
  });

  it('user create | list | grant, and the user signs in with the password read from stdin', async () => {
    await floe.bootstrap('cyberdyne');
    const user = await json(['user', 'create', 'miles@example.com', '--password-stdin', '--display-name', 'Miles'], {}, 'hunter22hunter\n');
    expect(user).toMatchObject({ email: 'miles@example.com', display_name: 'Miles', has_password: true, is_instance_admin: false });
    expect((await json(['user', 'list'])).users.map((u: { email: string }) => u.email)).toContain('miles@example.com');

    const grant = await json(['user', 'grant', 'miles@example.com', '--tenant', 'cyberdyne', '--role', 'member']);
    expect(grant).toMatchObject({ tenant_id: 'cyberdyne', user_id: user.id, role: 'member', granted_by: 'admin' });
    expect(await floe.metaQuery('SELECT role, granted_by FROM memberships WHERE user_id = $1', [user.id])).toEqual([{ role: 'member', granted_by: 'admin' }]);
    const members = await floeCli(['user', 'list', '--tenant', 'cyberdyne']);
    expect(members.stdout).toMatch(new RegExp(`^${user.id} \\| miles@example.com \\| member \\| admin`, 'm'));

    const login = await fetch(`${floe.routerUrl}/ui/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'miles@example.com', password: 'hunter22hunter' }) });
    expect(login.status).toBe(200);
    expect(((await login.json()) as { memberships: unknown }).memberships).toEqual([{ tenant_id: 'cyberdyne', role: 'member' }]);

    const badRole = await floeCli(['user', 'grant', 'miles@example.com', '--tenant', 'cyberdyne', '--role', 'owner']);
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toMatch(/body\.role must be equal to one of the allowed values: viewer, member, admin \(HTTP 400 bad_data\)/);
  });

  it('reports an unreachable router without a stack trace', async () => {
    const [port] = await freePorts(1); // nothing listens there
    const r = await floeCli(['tenant', 'list'], { FLOE_URL: `http://127.0.0.1:${port}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`floe tenant list: cannot reach http://127.0.0.1:${port}: ECONNREFUSED\n`);
  });
});
