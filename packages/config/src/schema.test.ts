import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.ts';

/** SSO rule 4 and the demo paragraph of spec 2: a setting that cannot work fails start by its key. */
const problemsOf = (overrides: Record<string, unknown>): string[] => {
  try {
    loadConfig({ env: {}, overrides });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

const sso = { issuer_url: 'https://idp.example.com', client_id: 'floe', client_secret: '<CLIENT_SECRET>' };

describe('auth.oidc and demo validation', () => {
  it.each([
    ['group_mappings without group_claim', { auth: { oidc: { ...sso, group_mappings: [{ group: 'ops', tenant: 'acme', role: 'admin' }] } } }, 'auth.oidc.group_claim: required when group_mappings is set'],
    ['disable_password_login without a provider', { auth: { oidc: { disable_password_login: true } } }, 'auth.oidc.disable_password_login: requires issuer_url'],
    ['a malformed issuer_url', { auth: { oidc: { ...sso, issuer_url: 'idp.example.com' } } }, 'auth.oidc.issuer_url: not an http(s) URL'],
    ['an issuer_url with a query', { auth: { oidc: { ...sso, issuer_url: 'https://idp.example.com/?x=1' } } }, 'auth.oidc.issuer_url: not an http(s) URL'],
    ['missing client_id', { auth: { oidc: { ...sso, client_id: '' } } }, 'auth.oidc.client_id: required when issuer_url is set'],
    ['missing client_secret', { auth: { oidc: { ...sso, client_secret: '' } } }, 'auth.oidc.client_secret: required when issuer_url is set'],
    ['an unknown role in a mapping', { auth: { oidc: { ...sso, group_claim: 'groups', group_mappings: [{ group: 'ops', tenant: 'acme', role: 'owner' }] } } }, 'auth.oidc.group_mappings.0.role'],
    ['demo without tenant_id', { demo: { enabled: true, username: 'demo@example.com', password: 'demo-pass' } }, 'demo.tenant_id: required when demo.enabled'],
    ['demo with a username that is no email', { demo: { enabled: true, tenant_id: 'acme', username: 'demo', password: 'demo-pass' } }, 'demo.username: required when demo.enabled, in <EMAIL> form'],
    ['demo without password', { demo: { enabled: true, tenant_id: 'acme', username: 'demo@example.com' } }, 'demo.password: required when demo.enabled'],
  ])('%s fails start naming the key', (_name, overrides, needle) => {
    expect(problemsOf(overrides).join('\n')).toContain(needle);
  });

  it('reports every problem of the section at once', () => {
    expect(problemsOf({ auth: { oidc: { issuer_url: 'nope', group_mappings: [{ group: 'g', tenant: 't', role: 'viewer' }] } } })).toEqual([
      'auth.oidc.group_claim: required when group_mappings is set',
      'auth.oidc.issuer_url: not an http(s) URL without query or fragment: "nope"',
      'auth.oidc.client_id: required when issuer_url is set',
      'auth.oidc.client_secret: required when issuer_url is set',
    ]);
  });

  it('accepts a complete provider and demo, and defaults to neither', () => {
    const cfg = loadConfig({
      env: {},
      overrides: {
        auth: { oidc: { ...sso, group_claim: 'groups', group_mappings: [{ group: 'ops', tenant: 'acme', role: 'admin' }], disable_password_login: true } },
        demo: { enabled: true, tenant_id: 'acme', username: 'demo@example.com', password: 'demo-pass' },
      },
    });
    expect(cfg.auth.oidc).toMatchObject({ ...sso, group_claim: 'groups', disable_password_login: true, allowed_email_domains: [] });
    expect(cfg.demo).toMatchObject({ enabled: true, tenant_id: 'acme' });
    const plain = loadConfig({ env: {} });
    expect(plain.auth.oidc.issuer_url).toBe('');
    expect(plain.demo.enabled).toBe(false);
  });

  it('a disabled demo section is not checked', () => {
    expect(problemsOf({ demo: { enabled: false, username: 'x' } })).toEqual([]);
  });
});

describe('querier result budgets', () => {
  it('max_held_result_mb below twice max_result_mb fails start naming the key (a tenant holds half: such a result could never be served)', () => {
    expect(problemsOf({ querier: { max_result_mb: 1024 } })).toEqual(['querier.max_held_result_mb: must be at least twice querier.max_result_mb (2048)']);
    expect(problemsOf({ querier: { max_result_mb: 1024, max_held_result_mb: 2048 } })).toEqual([]);
  });
});

describe('DuckDB memory limits', () => {
  it.each(['writer', 'compactor', 'querier'])('%s.memory_limit defaults to 2GB and takes DuckDB sizes', (section) => {
    expect((loadConfig({ env: {} }) as unknown as Record<string, { memory_limit: string }>)[section]!.memory_limit).toBe('2GB');
    const cfg = loadConfig({ env: {}, overrides: { [section]: { memory_limit: '512MiB' } } }) as unknown as Record<string, { memory_limit: string }>;
    expect(cfg[section]!.memory_limit).toBe('512MiB');
  });

  it.each(['writer', 'compactor', 'querier'])('a %s.memory_limit that is no DuckDB size fails start naming the key', (section) => {
    expect(problemsOf({ [section]: { memory_limit: '2 gigs' } })).toEqual([`${section}.memory_limit: not a DuckDB memory size (use e.g. "2GB", "512MB", "1GiB")`]);
    expect(problemsOf({ [section]: { memory_limit: "1GB'; SET threads=64; --" } })).toEqual([`${section}.memory_limit: not a DuckDB memory size (use e.g. "2GB", "512MB", "1GiB")`]);
  });
});
