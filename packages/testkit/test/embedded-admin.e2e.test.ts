import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFloeCli, startFloe, type FloeUnderTest } from '../src/index.ts';

/**
 * The embedded metadata DB belongs to the running `floe all`: `floe admin bootstrap` goes
 * through its router, and a second process refuses to open the same directory.
 */
describe('embedded instance administration', () => {
  let floe: FloeUnderTest;
  let env: Record<string, string>;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    env = { FLOE__META__DATA_DIR: join(floe.dataDir, 'meta'), FLOE__STORAGE__ROOT: join(floe.dataDir, 'data'), FLOE__LOG__LEVEL: 'warn' };
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('floe admin bootstrap reaches the running instance and its key works at once', async () => {
    const r = await runFloeCli(['admin', 'bootstrap', '--tenant', 'newco', '--json'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { tenant: string; dataset: string; api_key: string };
    expect(out).toMatchObject({ tenant: 'newco', dataset: 'default' });
    expect(out.api_key).toMatch(/^floe_/);
    const res = await fetch(`${floe.routerUrl}/tracequery/api/echo`, { headers: { authorization: `Bearer ${out.api_key}`, 'x-tenant-id': 'newco' } });
    expect(res.status).toBe(200);
  });

  it('a second process refuses the same metadata directory', async () => {
    const r = await runFloeCli(['writer'], { ...env, FLOE__WRITER__ADMIN_PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/in use by process \d+/);
  });

  it('the admin route needs an instance admin key', async () => {
    const none = await fetch(`${floe.routerUrl}/api/v1/admin/bootstrap`, { method: 'POST', body: '{"tenant":"x"}', headers: { 'content-type': 'application/json' } });
    expect(none.status).toBe(401);
    const wrong = await fetch(`${floe.routerUrl}/api/v1/admin/bootstrap`, { method: 'POST', body: '{"tenant":"x"}', headers: { 'content-type': 'application/json', authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(403);
    const admin = await fetch(`${floe.routerUrl}/api/v1/admin/bootstrap`, { method: 'POST', body: '{"tenant":"../x"}', headers: { 'content-type': 'application/json', authorization: `Bearer ${floe.adminApiKey}` } });
    expect(admin.status).toBe(400);
    expect(((await admin.json()) as { errorType: string }).errorType).toBe('bad_data');
  });
});
