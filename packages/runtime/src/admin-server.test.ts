import { afterEach, describe, expect, it } from 'vitest';
import { startAdminServer, type AdminServer } from './admin-server.ts';

/** The admin port's operator actions: JSON in and out, bad bodies refused before the action runs. */
describe('admin server actions', () => {
  let server: AdminServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const start = async (actionKey?: string) => {
    const seen: unknown[] = [];
    server = await startAdminServer({
      host: '127.0.0.1',
      port: 0,
      name: 'test',
      isReady: () => true,
      actionKey,
      actions: {
        'POST /act': async (body) => {
          seen.push(body);
          return { status: 202, body: { got: body } };
        },
        'POST /fail': async () => {
          throw new Error('secret detail');
        },
        'GET /jobs/{id}': async (_body, params) => ({ status: 200, body: { pattern: params } }),
        'GET /jobs/latest': async () => ({ status: 200, body: { exact: true } }),
        'GET /jobs/{id}/runs/{run}': async (_body, params) => ({ status: 200, body: { pattern: params } }),
      },
    });
    return { seen, url: `http://127.0.0.1:${server.port}` };
  };

  it('runs an action with its JSON body ({} when empty) and answers its JSON', async () => {
    const { seen, url } = await start();
    const res = await fetch(`${url}/act`, { method: 'POST', body: '{"tenant":"a"}' });
    expect([res.status, await res.json()]).toEqual([202, { got: { tenant: 'a' } }]);
    await fetch(`${url}/act`, { method: 'POST' });
    expect(seen).toEqual([{ tenant: 'a' }, {}]);
  });

  it('refuses bad JSON (400) and oversized bodies (413) without running the action, hides failures (500), and 404s other methods', async () => {
    const { seen, url } = await start();
    const bad = await fetch(`${url}/act`, { method: 'POST', body: '{nope' });
    expect([bad.status, ((await bad.json()) as { errorType: string }).errorType]).toEqual([400, 'bad_data']);
    const big = await fetch(`${url}/act`, { method: 'POST', body: JSON.stringify({ x: 'y'.repeat(100_000) }) });
    expect([big.status, ((await big.json()) as { errorType: string }).errorType]).toEqual([413, 'too_large']);
    const failed = await fetch(`${url}/fail`, { method: 'POST' });
    expect([failed.status, await failed.json()]).toEqual([500, { status: 'error', errorType: 'internal', error: 'action failed' }]);
    expect((await fetch(`${url}/act`)).status).toBe(404);
    expect(seen).toEqual([]);
  });

  it('routes a path parameter ({id}) to its action decoded, prefers an exact path, and 404s a path of another length or an empty segment', async () => {
    const { url } = await start('k');
    const get = async (path: string, key = 'k') => {
      const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } });
      return [res.status, await res.json()];
    };
    expect(await get('/jobs/abc-1')).toEqual([200, { pattern: { id: 'abc-1' } }]);
    expect(await get('/jobs/a%20b?x=1')).toEqual([200, { pattern: { id: 'a b' } }]);
    expect(await get('/jobs/latest')).toEqual([200, { exact: true }]);
    expect(await get('/jobs/j/runs/7')).toEqual([200, { pattern: { id: 'j', run: '7' } }]);
    for (const path of ['/jobs/', '/jobs', '/jobs/a/b', '/jobs/%E0%A4%A']) expect((await get(path))[0]).toBe(404);
    // A pattern's action is an action: it takes the key too.
    expect((await get('/jobs/abc-1', 'wrong'))[0]).toBe(401);
    expect((await fetch(`${url}/jobs/abc-1`, { method: 'POST', headers: { authorization: 'Bearer k' } })).status).toBe(404);
  });

  it('with an action key, runs actions only for a caller presenting it (401 with a challenge otherwise); probes stay open', async () => {
    const { seen, url } = await start('the-shared-key');
    for (const authorization of [undefined, 'Bearer wrong', 'Basic dGhlLXNoYXJlZC1rZXk6', 'Bearer the-shared-key2']) {
      const res = await fetch(`${url}/act`, { method: 'POST', body: '{"tenant":"a"}', headers: authorization ? { authorization } : {} });
      expect([res.status, res.headers.get('www-authenticate'), ((await res.json()) as { errorType: string }).errorType]).toEqual([401, 'Bearer realm="floe"', 'unauthorized']);
    }
    expect(seen).toEqual([]);
    const res = await fetch(`${url}/act`, { method: 'POST', body: '{"tenant":"a"}', headers: { authorization: 'Bearer the-shared-key' } });
    expect([res.status, await res.json()]).toEqual([202, { got: { tenant: 'a' } }]);
    expect(seen).toEqual([{ tenant: 'a' }]);
    expect((await fetch(`${url}/ready`)).status).toBe(200);
  });
});
