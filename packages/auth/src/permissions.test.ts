import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import {
  assertGrantableScopes,
  authorizeInstance,
  authorizeTenant,
  mayRevokeKey,
  resolvePrincipal,
  tenantRole,
  type ManagementAuthDeps,
  type Principal,
  type TenantAction,
} from './index.ts';

const user = (roles: Record<string, 'admin' | 'member' | 'viewer'>, isInstanceAdmin = false): Principal => ({
  kind: 'user',
  sessionId: 's',
  user: { id: 'u1', email: 'u@example.com', displayName: '', isInstanceAdmin, isDemo: false },
  roles: new Map(Object.entries(roles)),
});
const key = (scopes: string[], datasetId: string | null = null): Principal => ({ kind: 'api_key', keyId: 'k1', tenantId: 'acme', datasetId, scopes });

const P: Record<string, Principal> = {
  breakGlass: { kind: 'admin_key' },
  instanceAdmin: user({}, true),
  tenantAdmin: user({ acme: 'admin' }),
  member: user({ acme: 'member' }),
  viewer: user({ acme: 'viewer' }),
  stranger: user({ other: 'admin' }),
  manageKey: key(['ingest', 'tenant:manage']),
  datasetManageKey: key(['tenant:manage'], 'prod'),
  ingestKey: key(['ingest', 'query']),
};

const outcome = (f: () => unknown) => {
  try {
    f();
    return 'ok';
  } catch (err) {
    return (err as FloeError).kind;
  }
};

describe('who may do what in tenant acme', () => {
  const table: Array<[string, TenantAction, string]> = [];
  const expectations: Record<string, Partial<Record<TenantAction, string>>> = {
    breakGlass: { 'dataset.create': 'ok', 'api_key.manage': 'ok', 'tenant.update': 'ok' },
    instanceAdmin: { 'dataset.create': 'ok', 'membership.manage': 'ok' },
    tenantAdmin: { 'dataset.create': 'ok', 'dataset.delete': 'ok', 'api_key.create': 'ok', 'api_key.manage': 'ok', 'membership.manage': 'ok', 'tenant.update': 'ok' },
    manageKey: { 'dataset.create': 'ok', 'api_key.create': 'ok', 'membership.manage': 'ok', 'tenant.read': 'ok' },
    member: { 'tenant.read': 'ok', 'api_key.read': 'ok', 'api_key.create': 'ok', 'dataset.create': 'forbidden', 'dataset.delete': 'forbidden', 'api_key.manage': 'forbidden', 'membership.manage': 'forbidden' },
    viewer: { 'tenant.read': 'ok', 'membership.read': 'ok', 'api_key.create': 'forbidden', 'api_key.read': 'forbidden', 'dataset.create': 'forbidden' },
    stranger: { 'tenant.read': 'forbidden', 'dataset.create': 'forbidden' },
    datasetManageKey: { 'tenant.read': 'ok', 'dataset.create': 'forbidden', 'dataset.delete': 'forbidden', 'api_key.create': 'forbidden' },
    ingestKey: { 'tenant.read': 'ok', 'dataset.create': 'forbidden', 'api_key.create': 'forbidden' },
  };
  for (const [who, acts] of Object.entries(expectations)) for (const [act, want] of Object.entries(acts)) table.push([who, act as TenantAction, want]);

  it.each(table)('%s → %s: %s', (who, action, want) => {
    expect(outcome(() => authorizeTenant(P[who]!, action, 'acme'))).toBe(want);
  });

  it('a key has no role in another tenant; break-glass and instance admins have admin everywhere', () => {
    expect(tenantRole(P.manageKey!, 'other')).toBeUndefined();
    expect(outcome(() => authorizeTenant(P.manageKey!, 'tenant.read', 'other'))).toBe('forbidden');
    expect(tenantRole(P.breakGlass!, 'anything')).toBe('admin');
    expect(tenantRole(P.instanceAdmin!, 'anything')).toBe('admin');
  });

  it('instance-wide actions need the break-glass key or an instance admin', () => {
    expect(outcome(() => authorizeInstance(P.breakGlass!, 'tenant.create'))).toBe('ok');
    expect(outcome(() => authorizeInstance(P.instanceAdmin!, 'user.manage'))).toBe('ok');
    for (const who of ['tenantAdmin', 'manageKey', 'member']) expect(outcome(() => authorizeInstance(P[who]!, 'tenant.create'))).toBe('forbidden');
  });

  it('members may not grant tenant:manage; members revoke only their own keys', () => {
    expect(outcome(() => assertGrantableScopes('member', ['ingest', 'query']))).toBe('ok');
    expect(outcome(() => assertGrantableScopes('member', ['tenant:manage']))).toBe('forbidden');
    expect(outcome(() => assertGrantableScopes('admin', ['tenant:manage']))).toBe('ok');
    // Deleting data is a tenant admin's to grant too.
    expect(outcome(() => assertGrantableScopes('member', ['query', 'delete']))).toBe('forbidden');
    expect(outcome(() => assertGrantableScopes('admin', ['query', 'delete']))).toBe('ok');
    expect(mayRevokeKey(P.member!, 'acme', { createdBy: 'user:u1' })).toBe(true);
    expect(mayRevokeKey(P.member!, 'acme', { createdBy: 'user:u2' })).toBe(false);
    expect(mayRevokeKey(P.viewer!, 'acme', { createdBy: 'user:u1' })).toBe(false);
    expect(mayRevokeKey(P.manageKey!, 'acme', { createdBy: null })).toBe(true);
  });
});

describe('resolvePrincipal', () => {
  const deps: ManagementAuthDeps = {
    adminApiKey: 'root-secret',
    verifyKey: async (s) => (s === 'k-acme' ? { keyId: 'a1', tenantId: 'acme', datasetId: null, scopes: ['tenant:manage'] } : undefined),
    session: async (t) => (t === 'good-token' ? { sessionId: 'h', expiresAt: new Date(), user: { id: 'u1', email: 'u@x', displayName: '', isInstanceAdmin: false, isDemo: false }, roles: new Map() } : undefined),
  };
  const kindOf = async (creds: { authorization?: string; tenant?: string; sessionToken?: string }) => {
    try {
      return (await resolvePrincipal({ authorization: creds.authorization, tenant: creds.tenant, sessionToken: creds.sessionToken }, deps)).kind;
    } catch (err) {
      return (err as FloeError).kind;
    }
  };
  it.each([
    [{}, 'unauthorized'],
    [{ authorization: 'Basic x' }, 'unauthorized'],
    [{ authorization: 'Bearer nope' }, 'unauthorized'],
    [{ authorization: 'Bearer k-acme' }, 'api_key'],
    [{ authorization: 'Bearer k-acme', tenant: 'acme' }, 'api_key'],
    [{ authorization: 'Bearer k-acme', tenant: 'other' }, 'forbidden'],
    [{ authorization: 'Bearer root-secret' }, 'admin_key'],
    [{ sessionToken: 'good-token' }, 'user'],
    [{ sessionToken: 'stale-token' }, 'unauthorized'],
    // An explicit key wins over a cookie.
    [{ authorization: 'Bearer nope', sessionToken: 'good-token' }, 'unauthorized'],
  ])('%o → %s', async (creds, want) => {
    expect(await kindOf(creds)).toBe(want);
  });
});
