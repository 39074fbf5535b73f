import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { runFloeCli, signedInMember, startFakeGitHubApp, startFloe, type FakeGitHub, type FloeUnderTest } from '../src/index.ts';

/**
 * The source-control integration and the stack-frame source lookup (spec 2), against a running
 * embedded Floe and a fake GitHub on loopback (packages/testkit/src/fake-github.ts). Every rule is
 * checked by status, body, the rows stored, and the requests that reached the host.
 */

const PUBLIC_URL = 'https://floe.example.test';

interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

describe('source-control integration (embedded)', () => {
  let floe: FloeUnderTest;
  let gh: FakeGitHub;
  let admin: string;
  let acmeKey: string;
  let globexKey: string;
  let alice: string; // acme admin session cookie
  let aliceId: string;
  let bob: string; // another acme admin
  let vera: string; // acme viewer

  async function api<T = any>(method: string, path: string, c: { key?: string; cookie?: string; body?: unknown } = {}): Promise<Res<T>> {
    const headers: Record<string, string> = {};
    if (c.key) headers.authorization = `Bearer ${c.key}`;
    if (c.cookie) headers.cookie = c.cookie;
    if (c.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${floe.routerUrl}${path}`, { method, headers, body: c.body === undefined ? undefined : JSON.stringify(c.body), redirect: 'manual' });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text), headers: res.headers };
  }

  const newUser = (email: string, role: 'admin' | 'viewer', tenant = 'acme') => signedInMember(floe, { email, role, tenant });

  const startLink = async (c: { key?: string; cookie?: string }, tenant = 'acme') => {
    const res = await api('POST', `/api/v1/tenants/${tenant}/scm-installations/link`, c);
    expect(res.status).toBe(200);
    return new URL(res.body.install_url).searchParams.get('state')!;
  };

  const callback = async (q: Record<string, string>, cookie?: string) => {
    const res = await api('GET', `/ui/scm/callback?${new URLSearchParams(q)}`, { cookie });
    expect(res.status).toBe(302);
    return res.headers.get('location');
  };
  const refused = (reason: string) => `${PUBLIC_URL}/integrations/scm?scm=error&reason=${reason}`;
  const LINKED = `${PUBLIC_URL}/integrations/scm?scm=linked`;

  const lookup = (body: Record<string, unknown>, c: { key?: string; cookie?: string } = { key: acmeKey }, tenant = 'acme') =>
    api('POST', `/api/v1/tenants/${tenant}/source-context`, { ...c, body }).then((r) => {
      expect(r.status).toBe(200);
      return r.body;
    });

  beforeAll(async () => {
    // The host hands out PKCS#1 keys; Floe must take them as they come.
    const app = await startFakeGitHubApp();
    gh = app.gh;
    floe = await startFloe({ mode: 'embedded', config: { public: { api_url: PUBLIC_URL }, scm: app.scm } });
    admin = floe.adminApiKey;
    acmeKey = (await floe.bootstrap('acme')).api_key;
    globexKey = (await floe.bootstrap('globex')).api_key;
    ({ id: aliceId, cookie: alice } = await newUser('alice@acme.test', 'admin'));
    ({ cookie: bob } = await newUser('bob@acme.test', 'admin'));
    ({ cookie: vera } = await newUser('vera@acme.test', 'viewer'));

    const readOnly = { contents: 'read', metadata: 'read' };
    gh.addInstallation({ id: 101, account: { login: 'acme-org', type: 'Organization' }, permissions: readOnly, repositories: ['acme-org/api', 'acme-org/web'] });
    gh.addInstallation({ id: 102, account: { login: 'acme-org', type: 'Organization' }, permissions: { contents: 'write', metadata: 'read' }, repositories: ['acme-org/ops'] });
    gh.addInstallation({ id: 201, account: { login: 'globex', type: 'Organization' }, permissions: readOnly, repositories: ['globex/secret'] });
    gh.addInstallation({ id: 202, account: { login: 'globex', type: 'Organization' }, permissions: { contents: 'read', metadata: 'read', issues: 'write' }, repositories: ['globex/other'] });

    const appTs = ['import x from "y";', 'const a = 1;', 'export function f() {', '  return a;', '}'].join('\n') + '\n';
    gh.put('acme-org/api', 'src/app.ts', { type: 'file', content: appTs });
    gh.put('acme-org/api', 'src/app.ts', { type: 'file', content: 'tagged line 1\ntagged line 2\n' }, 'v1.0.0');
    gh.put('acme-org/web', 'web/only.ts', { type: 'file', content: 'only in web\n' });
    gh.put('acme-org/api', 'vendor/lib', { type: 'submodule' });
    gh.put('acme-org/api', 'link.ts', { type: 'symlink', target: '../outside.ts' });
    gh.put('acme-org/api', 'big.txt', { type: 'file', content: 'x'.repeat(512 * 1024 + 1) });
    gh.put('acme-org/api', 'image.png', { type: 'file', content: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]) });
    gh.put('acme-org/api', 'latin1.txt', { type: 'file', content: Buffer.from([0x63, 0x61, 0x66, 0xe9]) });
    gh.put('globex/secret', 'src/app.ts', { type: 'file', content: 'globex only\n' });
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
    await gh?.close();
  });

  describe('linking', () => {
    it('link → host → callback records the installation in the transaction that spends the state', async () => {
      const res = await api('POST', '/api/v1/tenants/acme/scm-installations/link', { cookie: alice });
      expect(res.status).toBe(200);
      const url = new URL(res.body.install_url);
      expect(`${url.origin}${url.pathname}`).toBe(`${gh.webUrl}/apps/floe-test/installations/new`);
      const state = url.searchParams.get('state')!;
      expect(state).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // Only the hash is stored.
      const stored = await floe.metaQuery<{ state_hash: string; user_id: string }>('SELECT state_hash, user_id FROM scm_link_states');
      expect(stored.some((r) => r.state_hash === state)).toBe(false);
      expect(stored.some((r) => r.user_id === aliceId)).toBe(true);

      const code = gh.issueCode('alice', [101]);
      expect(await callback({ code, installation_id: '101', state, setup_action: 'install' }, alice)).toBe(LINKED);
      const list = await api('GET', '/api/v1/tenants/acme/scm-installations', { cookie: alice });
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({
        configured: true,
        stale: false,
        installations: [{ installation_id: 101, account: { login: 'acme-org', type: 'Organization' }, repositories: ['acme-org/api', 'acme-org/web'], linked_by: `user:${aliceId}`, stale: false }],
      });
      // Spent: the same state is refused afterwards.
      expect(await callback({ code: gh.issueCode('alice', [101]), installation_id: '101', state }, alice)).toBe(refused('state'));
    });

    it('re-running the flow refreshes the record without failing', async () => {
      const before = (await floe.metaQuery<{ refreshed_at: Date }>('SELECT refreshed_at FROM scm_installations WHERE tenant_id = $1', ['acme']))[0]!;
      const state = await startLink({ cookie: alice });
      expect(await callback({ code: gh.issueCode('alice', [101]), installation_id: '101', state }, alice)).toBe(LINKED);
      const rows = await floe.metaQuery<{ refreshed_at: Date }>('SELECT refreshed_at FROM scm_installations WHERE tenant_id = $1', ['acme']);
      expect(rows).toHaveLength(1);
      expect(rows[0]!.refreshed_at.getTime()).toBeGreaterThanOrEqual(before.refreshed_at.getTime());
    });

    it.each([
      ['state: unknown token', async () => callback({ code: gh.issueCode('alice', [101]), installation_id: '101', state: 'A'.repeat(43) }, alice), 'state'],
      ['state: missing', async () => callback({ code: gh.issueCode('alice', [101]), installation_id: '101' }, alice), 'state'],
      [
        'state: expired',
        async () => {
          const state = await startLink({ cookie: alice });
          await floe.metaQuery(`UPDATE scm_link_states SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`);
          return callback({ code: gh.issueCode('alice', [101]), installation_id: '101', state }, alice);
        },
        'state',
      ],
      ['session: no browser session', async () => callback({ code: gh.issueCode('alice', [101]), installation_id: '101', state: await startLink({ cookie: alice }) }), 'session'],
      ['forbidden: another admin finishes a user-started flow', async () => callback({ code: gh.issueCode('bob', [101]), installation_id: '101', state: await startLink({ cookie: alice }) }, bob), 'forbidden'],
      ['forbidden: a viewer finishes a key-started flow', async () => callback({ code: gh.issueCode('vera', [101]), installation_id: '101', state: await startLink({ key: acmeKey }) }, vera), 'forbidden'],
      ['forbidden: installation not in the user’s own list', async () => callback({ code: gh.issueCode('alice', [102]), installation_id: '101', state: await startLink({ cookie: alice }) }, alice), 'forbidden'],
      ['scm: the host refuses the code', async () => callback({ code: 'not-a-code', installation_id: '101', state: await startLink({ cookie: alice }) }, alice), 'scm'],
      [
        'scm: the host is unreachable',
        async () => {
          const state = await startLink({ cookie: alice });
          gh.setDown(true);
          try {
            return await callback({ code: gh.issueCode('alice', [101]), installation_id: '101', state }, alice);
          } finally {
            gh.setDown(false);
          }
        },
        'scm',
      ],
      ['permissions: a write-capable installation', async () => callback({ code: gh.issueCode('alice', [102]), installation_id: '102', state: await startLink({ cookie: alice }) }, alice), 'permissions'],
    ])('refuses %s', async (_name, run, reason) => {
      expect(await run()).toBe(refused(reason));
      expect(await floe.metaQuery('SELECT 1 FROM scm_installations WHERE installation_id = 102')).toEqual([]);
    });

    it('a failure of Floe itself during the callback is a redirect with a generic reason, not an error body', async () => {
      const state = await startLink({ cookie: alice });
      // The record's table gone for the moment: the transaction that spends the state fails.
      await floe.metaQuery('ALTER TABLE scm_installations RENAME TO scm_installations_away');
      try {
        expect(await callback({ code: gh.issueCode('alice', [101]), installation_id: '101', state }, alice)).toBe(refused('scm'));
      } finally {
        await floe.metaQuery('ALTER TABLE scm_installations_away RENAME TO scm_installations');
      }
      // The browser session cannot be read either: the same redirect.
      await floe.metaQuery('ALTER TABLE sessions RENAME TO sessions_away');
      try {
        expect(await callback({ code: gh.issueCode('alice', [101]), installation_id: '101', state }, alice)).toBe(refused('scm'));
      } finally {
        await floe.metaQuery('ALTER TABLE sessions_away RENAME TO sessions');
      }
      // Nothing was spent: the same flow still completes.
      expect(await callback({ code: gh.issueCode('alice', [101]), installation_id: '101', state }, alice)).toBe(LINKED);
    });

    it('a flow started with a tenant:manage key may be finished by any admin of the tenant', async () => {
      const state = await startLink({ key: acmeKey });
      expect(await callback({ code: gh.issueCode('bob', [101]), installation_id: '101', state }, bob)).toBe(LINKED);
    });

    it('link and list need a tenant admin; other tenants’ admins are refused', async () => {
      expect((await api('POST', '/api/v1/tenants/acme/scm-installations/link', { cookie: vera })).status).toBe(403);
      expect((await api('GET', '/api/v1/tenants/acme/scm-installations', { cookie: vera })).status).toBe(403);
      expect((await api('GET', '/api/v1/tenants/acme/scm-installations', { key: globexKey })).status).toBe(403);
      expect((await api('POST', '/api/v1/tenants/acme/scm-installations/link', { key: admin })).status).toBe(200);
      expect((await api('POST', '/api/v1/tenants/acme/scm-installations/link')).status).toBe(401);
    });

    it('the list keeps the last known repositories, marked stale, while the host is down', async () => {
      gh.setDown(true);
      try {
        const list = await api('GET', '/api/v1/tenants/acme/scm-installations', { key: acmeKey });
        expect(list.status).toBe(200);
        expect(list.body).toMatchObject({ configured: true, stale: true, installations: [{ installation_id: 101, repositories: ['acme-org/api', 'acme-org/web'], stale: true }] });
      } finally {
        gh.setDown(false);
      }
    });
  });

  describe('attach', () => {
    it('is for instance admins only, and checks the installation with the app JWT', async () => {
      expect((await api('POST', '/api/v1/tenants/globex/scm-installations/attach', { key: globexKey, body: { installation_id: 201 } })).status).toBe(403);
      expect((await api('POST', '/api/v1/tenants/acme/scm-installations/attach', { cookie: alice, body: { installation_id: 201 } })).status).toBe(403);
      expect((await api('POST', '/api/v1/tenants/globex/scm-installations/attach', { key: admin, body: { installation_id: 999 } })).status).toBe(404);
      const write = await api('POST', '/api/v1/tenants/globex/scm-installations/attach', { key: admin, body: { installation_id: 202 } });
      expect(write.status).toBe(400);
      expect(write.body.error).toMatch(/write-capable/);
      const ok = await api('POST', '/api/v1/tenants/globex/scm-installations/attach', { key: admin, body: { installation_id: 201 } });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ installation_id: 201, account: { login: 'globex' }, repositories: ['globex/secret'], linked_by: 'admin' });
      expect(gh.count('GET', '/api/v3/app/installations/201')).toBeGreaterThan(0);
    });
  });

  describe('source context', () => {
    it('serves the lines around a frame from the default branch, with ref null and a link', async () => {
      const body = await lookup({ repository: 'acme-org/api', path: 'src/app.ts', line: 3, context_lines: 1 });
      expect(body).toEqual({
        status: 'available',
        repository: 'acme-org/api',
        ref: null,
        path: 'src/app.ts',
        url: `${gh.webUrl}/acme-org/api/blob/main/src/app.ts#L3`,
        line: 3,
        start_line: 2,
        lines: [
          { number: 2, text: 'const a = 1;' },
          { number: 3, text: 'export function f() {' },
          { number: 4, text: '  return a;' },
        ],
      });
    });

    it('reads a ref, accepts a repository URL, and any reader of the tenant may ask', async () => {
      const body = await lookup({ repository: 'https://github.com/Acme-Org/api.git', ref: 'v1.0.0', path: '/src/app.ts', line: 2 }, { cookie: vera });
      expect(body).toMatchObject({ status: 'available', repository: 'acme-org/api', ref: 'v1.0.0', lines: [{ number: 1, text: 'tagged line 1' }, { number: 2, text: 'tagged line 2' }] });
    });

    it('a context wider than 100 lines is answered with 100 on each side, not refused', async () => {
      gh.put('acme-org/api', 'long.ts', { type: 'file', content: Array.from({ length: 400 }, (_, i) => `line ${i + 1}`).join('\n') });
      const body = (await lookup({ repository: 'acme-org/api', path: 'long.ts', line: 200, context_lines: 5000 })) as { status: string; start_line: number; lines: Array<{ number: number }> };
      expect(body.status).toBe('available');
      expect(body.start_line).toBe(100);
      expect(body.lines.map((l) => l.number)).toEqual(Array.from({ length: 201 }, (_, i) => 100 + i));
    });

    it('without a repository probes the linked ones and names the one that served', async () => {
      expect(await lookup({ path: 'web/only.ts', line: 1 })).toMatchObject({ status: 'available', repository: 'acme-org/web', lines: [{ number: 1, text: 'only in web' }] });
    });

    it.each([
      ['not_found', { repository: 'acme-org/api', path: 'nope.ts', line: 1 }],
      ['not_a_file', { repository: 'acme-org/api', path: 'src', line: 1 }],
      ['not_a_file', { repository: 'acme-org/api', path: 'vendor/lib' }],
      ['not_a_file', { repository: 'acme-org/api', path: 'link.ts' }],
      ['too_large', { repository: 'acme-org/api', path: 'big.txt', line: 1 }],
      ['undecodable', { repository: 'acme-org/api', path: 'image.png', line: 1 }],
      ['undecodable', { repository: 'acme-org/api', path: 'latin1.txt', line: 1 }],
      ['line_out_of_range', { repository: 'acme-org/api', path: 'src/app.ts', line: 99 }],
      ['no_installation', { repository: 'nobody/nothing', path: 'src/app.ts', line: 1 }],
    ])('answers unavailable %s', async (reason, body) => {
      expect(await lookup(body)).toEqual({ status: 'unavailable', reason });
    });

    it('another tenant’s repository is indistinguishable from an unlinked one', async () => {
      const foreign = await lookup({ repository: 'globex/secret', path: 'src/app.ts', line: 1 });
      const unlinked = await lookup({ repository: 'nobody/secret', path: 'src/app.ts', line: 1 });
      expect(foreign).toEqual(unlinked);
      expect(foreign).toEqual({ status: 'unavailable', reason: 'no_installation' });
      // …while globex itself reads it.
      expect(await lookup({ repository: 'globex/secret', path: 'src/app.ts', line: 1 }, { key: globexKey }, 'globex')).toMatchObject({ status: 'available' });
      expect((await api('POST', '/api/v1/tenants/globex/source-context', { key: acmeKey, body: { path: 'src/app.ts' } })).status).toBe(403);
    });

    it('serves a file again from the cache, slicing other windows from it, and reuses the installation token', async () => {
      const path = (p: string) => gh.count('GET', `/api/v3/repos/acme-org/web/contents/${p}`);
      gh.put('acme-org/web', 'cached.ts', { type: 'file', content: 'one\ntwo\nthree\n' });
      const mints = gh.count('POST', '/api/v3/app/installations/101/access_tokens');
      expect(await lookup({ repository: 'acme-org/web', path: 'cached.ts', line: 1, context_lines: 0 })).toMatchObject({ lines: [{ number: 1, text: 'one' }] });
      expect(await lookup({ repository: 'acme-org/web', path: 'cached.ts', line: 3, context_lines: 0 })).toMatchObject({ lines: [{ number: 3, text: 'three' }] });
      expect(await lookup({ repository: 'acme-org/web', path: 'cached.ts', line: 2, context_lines: 0 })).toMatchObject({ lines: [{ number: 2, text: 'two' }] });
      expect(path('cached.ts')).toBe(1);
      // Content-caused unavailability is cached too.
      const bigBefore = gh.count('GET', '/api/v3/repos/acme-org/api/contents/big.txt');
      await lookup({ repository: 'acme-org/api', path: 'big.txt', line: 1 });
      expect(gh.count('GET', '/api/v3/repos/acme-org/api/contents/big.txt')).toBe(bigBefore);
      expect(gh.count('POST', '/api/v3/app/installations/101/access_tokens')).toBe(mints);
    });

    it('answers scm_error when the host is down and the file is not cached', async () => {
      gh.setDown(true);
      try {
        expect(await lookup({ repository: 'acme-org/api', path: 'never-read.ts', line: 1 })).toEqual({ status: 'unavailable', reason: 'scm_error' });
        // A cached file is still served.
        expect(await lookup({ repository: 'acme-org/web', path: 'cached.ts', line: 1 })).toMatchObject({ status: 'available' });
      } finally {
        gh.setDown(false);
      }
    });

    it('GET reports configured and linked; keys without query scope are refused', async () => {
      expect((await api('GET', '/api/v1/tenants/acme/source-context', { key: acmeKey })).body).toEqual({ configured: true, linked: true });
      const ingestOnly = await api('POST', '/api/v1/tenants/acme/api-keys', { key: acmeKey, body: { name: 'ingest', scopes: ['ingest'] } });
      expect(ingestOnly.status).toBe(201);
      expect((await api('POST', '/api/v1/tenants/acme/source-context', { key: ingestOnly.body.secret, body: { path: 'src/app.ts' } })).status).toBe(403);
    });
  });

  describe('CLI and agent tools', () => {
    it('floe scm list, source-context and attach go through the same routes', async () => {
      const env = { FLOE_URL: floe.routerUrl, FLOE_API_KEY: acmeKey, FLOE_TENANT: 'acme' };
      const list = await runFloeCli(['scm', 'list', '--json'], env);
      expect(list.code, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toMatchObject({ configured: true, installations: [{ installation_id: 101 }] });
      const snippet = await runFloeCli(['scm', 'source-context', 'src/app.ts', '--repository', 'acme-org/api', '--line', '3', '--context-lines', '1'], env);
      expect(snippet.code, snippet.stderr).toBe(0);
      expect(snippet.stdout).toContain('> 3 | export function f() {');
      expect(snippet.stdout).toContain('  4 |   return a;');
      const missing = await runFloeCli(['scm', 'source-context', 'nope.ts', '--repository', 'acme-org/api', '--line', '1'], env);
      expect(missing.stdout.trim()).toBe('unavailable: not_found');
      // Attach is instance-admin only: the tenant's own key is refused with the router's message.
      const attach = await runFloeCli(['scm', 'attach', '201'], env);
      expect(attach.code).toBe(1);
      expect(attach.stderr).toMatch(/instance admin.*HTTP 403/);
    });

    /** An MCP client of the router's /mcp, acting with `key` for `tenant`; closed after `run`. */
    const withMcp = async (key: string, run: (tool: (name: string, args?: Record<string, unknown>) => Promise<CallToolResult>) => Promise<void>, tenant = 'acme') => {
      const client = new Client({ name: 'floe-e2e', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${floe.routerUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } } }));
      try {
        await run(async (name, args = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult);
      } finally {
        await client.close();
      }
    };
    const answer = (res: CallToolResult) => {
      expect(res.isError, JSON.stringify(res.content)).toBeFalsy();
      return res.structuredContent as Record<string, any>;
    };
    const errorText = (res: CallToolResult) => {
      expect(res.isError).toBe(true);
      return (res.content[0] as { text: string }).text;
    };
    const queryOnlyKey = async () => {
      const res = await api('POST', '/api/v1/tenants/acme/api-keys', { key: acmeKey, body: { name: `query-${Date.now()}`, scopes: ['query'] } });
      expect(res.status).toBe(201);
      return res.body.secret as string;
    };

    it('the source_context tool answers as the route does', async () => {
      await withMcp(acmeKey, async (tool) => {
        expect(answer(await tool('source_context', { repository: 'acme-org/api', path: 'src/app.ts', line: 1, context_lines: 0 }))).toMatchObject({
          status: 'available',
          repository: 'acme-org/api',
          ref: null,
          lines: [{ number: 1, text: 'import x from "y";' }],
          truncated: false,
        });
        expect(answer(await tool('source_context', { repository: 'globex/secret', path: 'src/app.ts' }))).toMatchObject({ status: 'unavailable', reason: 'no_installation' });
      });
    });

    it('the scm_list tool lists the linked installations as the route does; a key that only queries is refused', async () => {
      await withMcp(acmeKey, async (tool) => {
        const listed = answer(await tool('scm_list'));
        expect(listed).toMatchObject({
          configured: true,
          stale: false,
          installations: [{ installation_id: 101, account: { login: 'acme-org', type: 'Organization' }, repositories: ['acme-org/api', 'acme-org/web'], stale: false }],
          truncated: false,
        });
        const direct = await api('GET', '/api/v1/tenants/acme/scm-installations', { key: acmeKey });
        expect(Object.keys(listed.installations[0]).sort()).toEqual(Object.keys(direct.body.installations[0]).sort());
      });
      await withMcp(await queryOnlyKey(), async (tool) => {
        expect(errorText(await tool('scm_list'))).toBe('forbidden (HTTP 403): managing source-control links of tenant acme needs a tenant admin');
        expect(errorText(await tool('scm_link'))).toMatch(/^forbidden \(HTTP 403\): /);
        expect(errorText(await tool('scm_remove', { installation_id: 101 }))).toMatch(/^forbidden \(HTTP 403\): /);
      });
      // The link survived the refused removal.
      expect(await floe.metaQuery('SELECT 1 FROM scm_installations WHERE tenant_id = $1 AND installation_id = 101', ['acme'])).toHaveLength(1);
    });

    it('the scm_link tool returns an install URL whose single-use state a tenant admin’s browser completes', async () => {
      await withMcp(acmeKey, async (tool) => {
        const link = answer(await tool('scm_link'));
        expect(link).toEqual({ install_url: expect.any(String), expires_at: expect.any(String), truncated: false });
        expect(Date.parse(link.expires_at)).toBeGreaterThan(Date.now());
        const url = new URL(link.install_url);
        expect(`${url.origin}${url.pathname}`).toBe(`${gh.webUrl}/apps/floe-test/installations/new`);
        const state = url.searchParams.get('state')!;
        expect(state).toMatch(/^[A-Za-z0-9_-]{43}$/);
        // Started with a key, so any admin of the tenant may finish it; then the state is spent.
        expect(await callback({ code: gh.issueCode('bob', [101]), installation_id: '101', state }, bob)).toBe(LINKED);
        expect(await callback({ code: gh.issueCode('bob', [101]), installation_id: '101', state }, bob)).toBe(refused('state'));
      });
    });

    it('the scm_attach tool attaches as an instance admin and is refused for a tenant admin’s key; scm_remove removes the link', async () => {
      gh.addInstallation({ id: 103, account: { login: 'acme-org', type: 'Organization' }, permissions: { contents: 'read', metadata: 'read' }, repositories: ['acme-org/tools'] });
      await withMcp(acmeKey, async (tool) => {
        expect(errorText(await tool('scm_attach', { installation_id: 103 }))).toBe('forbidden (HTTP 403): attaching an installation needs an instance admin');
      });
      expect(await floe.metaQuery('SELECT 1 FROM scm_installations WHERE installation_id = 103')).toEqual([]);
      await withMcp(admin, async (tool) => {
        expect(answer(await tool('scm_attach', { installation_id: 103 }))).toMatchObject({
          installation_id: 103,
          account: { login: 'acme-org', type: 'Organization' },
          repositories: ['acme-org/tools'],
          linked_by: 'admin',
          truncated: false,
        });
        expect(errorText(await tool('scm_attach', { installation_id: 999 }))).toMatch(/^not_found \(HTTP 404\): /);
      });
      await withMcp(acmeKey, async (tool) => {
        expect(answer(await tool('scm_list')).installations.map((i: { installation_id: number }) => i.installation_id)).toEqual([101, 103]);
        expect(answer(await tool('scm_remove', { installation_id: 103 }))).toEqual({ removed: 103, truncated: false });
        expect(answer(await tool('scm_list')).installations.map((i: { installation_id: number }) => i.installation_id)).toEqual([101]);
        expect(errorText(await tool('scm_remove', { installation_id: 103 }))).toBe('not_found (HTTP 404): installation 103 is not linked to tenant acme');
      });
      expect(await floe.metaQuery('SELECT 1 FROM scm_installations WHERE installation_id = 103')).toEqual([]);
    });
  });

  describe('remove', () => {
    it('stops access at once: no lookup reaches the host for the removed installation', async () => {
      expect((await api('DELETE', '/api/v1/tenants/acme/scm-installations/101', { cookie: vera })).status).toBe(403);
      expect((await api('DELETE', '/api/v1/tenants/acme/scm-installations/101', { cookie: alice })).status).toBe(204);
      const before = gh.requests.length;
      expect(await lookup({ repository: 'acme-org/web', path: 'cached.ts', line: 1 })).toEqual({ status: 'unavailable', reason: 'no_installation' });
      expect(await lookup({ path: 'src/app.ts', line: 1 })).toEqual({ status: 'unavailable', reason: 'no_installation' });
      expect(gh.requests.length).toBe(before);
      expect((await api('GET', '/api/v1/tenants/acme/source-context', { key: acmeKey })).body).toEqual({ configured: true, linked: false });
      expect((await api('DELETE', '/api/v1/tenants/acme/scm-installations/101', { cookie: alice })).status).toBe(404);
      // globex's own link is untouched.
      expect(await lookup({ repository: 'globex/secret', path: 'src/app.ts', line: 1 }, { key: globexKey }, 'globex')).toMatchObject({ status: 'available' });
    });
  });
});

describe('source-control integration with the scm section unset (embedded)', () => {
  let floe: FloeUnderTest;
  let acmeKey: string;
  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    acmeKey = (await floe.bootstrap('acme')).api_key;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${floe.routerUrl}${path}`, {
      method,
      redirect: 'manual',
      headers: { authorization: `Bearer ${acmeKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it.each([
    ['POST', '/api/v1/tenants/acme/scm-installations/link', undefined],
    ['GET', '/api/v1/tenants/acme/scm-installations', undefined],
    ['DELETE', '/api/v1/tenants/acme/scm-installations/101', undefined],
    ['POST', '/api/v1/tenants/acme/scm-installations/attach', { installation_id: 1 }],
    ['GET', '/ui/scm/callback?code=x&installation_id=1&state=y', undefined],
  ])('%s %s answers 404', async (method, path, body) => {
    const res = await call(method, path, body);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ status: 'error', errorType: 'not_found' });
  });

  it('source context answers not_configured, and GET says so', async () => {
    const res = await call('POST', '/api/v1/tenants/acme/source-context', { path: 'src/app.ts', line: 1 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'unavailable', reason: 'not_configured' });
    expect(await (await call('GET', '/api/v1/tenants/acme/source-context')).json()).toEqual({ configured: false, linked: false });
  });
});

describe('source-control integration: the per-installation request budget (embedded)', () => {
  let floe: FloeUnderTest;
  let gh: FakeGitHub;
  let key: string;
  const BUDGET = 3;

  const call = async (method: string, path: string, body?: unknown, asKey = key) => {
    const res = await fetch(`${floe.routerUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${asKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const lookup = async (path: string) => (await call('POST', '/api/v1/tenants/acme/source-context', { repository: 'acme-org/api', path, line: 1 })).body;
  const contents = () => gh.count('GET', /^\/api\/v3\/repos\/acme-org\/api\/contents\//);

  beforeAll(async () => {
    const app = await startFakeGitHubApp();
    gh = app.gh;
    floe = await startFloe({ mode: 'embedded', config: { public: { api_url: PUBLIC_URL }, scm: { ...app.scm, requests_per_hour: BUDGET } } });
    key = (await floe.bootstrap('acme')).api_key;
    gh.addInstallation({ id: 101, account: { login: 'acme-org', type: 'Organization' }, permissions: { contents: 'read', metadata: 'read' }, repositories: ['acme-org/api'] });
    for (const f of ['a.ts', 'b.ts', 'c.ts']) gh.put('acme-org/api', f, { type: 'file', content: `${f}\n` });
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
    await gh?.close();
  });

  it('spends one request per host call made with the installation token; a spent budget answers scm_error without reaching the host', async () => {
    // Attaching reads the installation with the app JWT (not counted) and its repositories with its token (one request).
    expect((await call('POST', '/api/v1/tenants/acme/scm-installations/attach', { installation_id: 101 }, floe.adminApiKey)).status).toBe(200);
    expect(await lookup('a.ts')).toMatchObject({ status: 'available', lines: [{ text: 'a.ts' }] });
    expect(await lookup('b.ts')).toMatchObject({ status: 'available' });
    expect(contents()).toBe(2);
    expect(await lookup('c.ts')).toEqual({ status: 'unavailable', reason: 'scm_error' });
    expect(contents()).toBe(2);
    // What is cached is still served, and the listing falls back to the last known repositories.
    expect(await lookup('a.ts')).toMatchObject({ status: 'available' });
    const listed = await call('GET', '/api/v1/tenants/acme/scm-installations');
    expect(listed.status).toBe(200);
    expect(listed.body.installations[0]).toMatchObject({ installation_id: 101, repositories: ['acme-org/api'], stale: true });
    // Minting tokens is the app's budget: it was never refused.
    expect(gh.count('POST', '/api/v3/app/installations/101/access_tokens')).toBe(1);
  });
});
