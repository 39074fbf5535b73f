import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { authenticate, type AuthDeps } from './index.ts';

const keys: Record<string, { keyId: string; tenantId: string; datasetId: string | null; scopes: string[] }> = {
  'k-acme': { keyId: 'a1', tenantId: 'acme', datasetId: null, scopes: ['ingest', 'query'] },
  'k-acme-prod': { keyId: 'a2', tenantId: 'acme', datasetId: 'prod', scopes: ['ingest'] },
};
const deps: AuthDeps = {
  verifyKey: async (s) => keys[s],
  datasetExists: async (t, d) => t === 'acme' && ['default', 'prod'].includes(d),
  adminApiKey: 'root-secret',
};

const kindOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return (err as FloeError).kind;
  }
  return 'ok';
};

describe('authenticate', () => {
  it.each([
    [{ authorization: undefined, tenant: 'acme', dataset: undefined }, 'unauthorized'],
    [{ authorization: 'Basic abc', tenant: 'acme', dataset: undefined }, 'unauthorized'],
    [{ authorization: 'Bearer nope', tenant: 'acme', dataset: undefined }, 'unauthorized'],
    [{ authorization: 'Bearer k-acme', tenant: undefined, dataset: undefined }, 'unauthorized'],
    [{ authorization: 'Bearer k-acme', tenant: 'other', dataset: undefined }, 'forbidden'],
    [{ authorization: 'Bearer k-acme-prod', tenant: 'acme', dataset: 'default' }, 'forbidden'],
    [{ authorization: 'Bearer k-acme', tenant: 'acme', dataset: 'missing' }, 'forbidden'],
    [{ authorization: 'Bearer k-acme', tenant: 'ac/../me', dataset: undefined }, 'bad_data'],
    [{ authorization: 'Bearer k-acme', tenant: 'acme', dataset: undefined }, 'ok'],
    [{ authorization: 'bearer k-acme-prod', tenant: 'acme', dataset: undefined }, 'ok'],
    [{ authorization: 'Bearer root-secret', tenant: 'anyone', dataset: undefined }, 'ok'],
    [{ authorization: 'Bearer root-secret', tenant: 'acme', dataset: 'prod' }, 'ok'],
    // A dataset that does not exist (or no longer does) is refused to the admin key too.
    [{ authorization: 'Bearer root-secret', tenant: 'acme', dataset: 'missing' }, 'forbidden'],
  ])('%o → %s', async (creds, expected) => {
    expect(await kindOf(authenticate(creds, deps))).toBe(expected);
  });

  it('takes Basic base64(<tenant>:<key>) with the tenant as the user, X-Tenant-ID winning', async () => {
    const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
    expect(await authenticate({ authorization: basic('acme:k-acme'), tenant: undefined, dataset: undefined }, deps)).toMatchObject({ tenant: 'acme', principal: 'a1' });
    expect(await kindOf(authenticate({ authorization: basic('acme:k-acme'), tenant: 'other', dataset: undefined }, deps))).toBe('forbidden');
    expect(await kindOf(authenticate({ authorization: basic('other:k-acme'), tenant: undefined, dataset: undefined }, deps))).toBe('forbidden');
    expect(await kindOf(authenticate({ authorization: basic('acme:nope'), tenant: undefined, dataset: undefined }, deps))).toBe('unauthorized');
    for (const bad of [basic('acme'), basic(':k-acme'), basic('acme:'), 'Basic !!!']) {
      expect(await kindOf(authenticate({ authorization: bad, tenant: undefined, dataset: undefined }, deps))).toBe('unauthorized');
    }
  });

  it('resolves the dataset: header, else the key binding, else default', async () => {
    expect((await authenticate({ authorization: 'Bearer k-acme', tenant: 'acme', dataset: undefined }, deps)).dataset).toBe('default');
    expect(await authenticate({ authorization: 'Bearer k-acme-prod', tenant: 'acme', dataset: undefined }, deps)).toMatchObject({ dataset: 'prod', datasetBound: true });
    expect(await authenticate({ authorization: 'Bearer k-acme', tenant: 'acme', dataset: 'prod' }, deps)).not.toHaveProperty('datasetBound');
  });

  it('enforces a required scope', async () => {
    expect(await kindOf(authenticate({ authorization: 'Bearer k-acme-prod', tenant: 'acme', dataset: undefined }, deps, 'query'))).toBe('forbidden');
  });
});

describe("authenticate with missingTenant: 'bad_data' (the trace query API)", () => {
  const bad = { missingTenant: 'bad_data' } as const;
  it.each([
    ['a key but no tenant named: malformed', { authorization: 'Bearer k-acme', tenant: undefined, dataset: undefined }, 'bad_data'],
    ['a blank X-Tenant-ID counts as none', { authorization: 'Bearer k-acme', tenant: '  ', dataset: undefined }, 'bad_data'],
    ['an unknown key and no tenant: the header is checked first', { authorization: 'Bearer nope', tenant: undefined, dataset: undefined }, 'bad_data'],
    ['a malformed X-Tenant-ID', { authorization: 'Bearer k-acme', tenant: 'ac/../me', dataset: undefined }, 'bad_data'],
    ['a malformed X-Dataset-ID', { authorization: 'Bearer k-acme', tenant: 'acme', dataset: 'Prod!' }, 'bad_data'],
    ['no Authorization at all', { authorization: undefined, tenant: undefined, dataset: undefined }, 'unauthorized'],
    ['a malformed Authorization', { authorization: 'Basic abc', tenant: undefined, dataset: undefined }, 'unauthorized'],
    ['an unknown key for a named tenant', { authorization: 'Bearer nope', tenant: 'acme', dataset: undefined }, 'unauthorized'],
    ["another tenant's key", { authorization: 'Bearer k-acme', tenant: 'other', dataset: undefined }, 'forbidden'],
    ['a Basic user names the tenant', { authorization: `Basic ${Buffer.from('acme:k-acme').toString('base64')}`, tenant: undefined, dataset: undefined }, 'ok'],
  ])('%s → %s', async (_name, creds, expected) => {
    expect(await kindOf(authenticate(creds, deps, 'query', bad))).toBe(expected);
  });

  it('names the header in the message', async () => {
    await expect(authenticate({ authorization: 'Bearer k-acme', tenant: undefined, dataset: undefined }, deps, 'query', bad)).rejects.toMatchObject({
      kind: 'bad_data',
      message: expect.stringContaining('X-Tenant-ID'),
    });
  });

  it('leaves tenantFromKey as it was: the tenant comes from the key, and a key naming none is unauthenticated', async () => {
    const fromKey = { ...bad, tenantFromKey: true };
    expect(await authenticate({ authorization: 'Bearer k-acme', tenant: undefined, dataset: undefined }, deps, 'query', fromKey)).toMatchObject({ tenant: 'acme' });
    expect(await kindOf(authenticate({ authorization: 'Bearer nope', tenant: undefined, dataset: undefined }, deps, 'query', fromKey))).toBe('unauthorized');
  });

  it('is 401 without the option, as remote write requires', async () => {
    expect(await kindOf(authenticate({ authorization: 'Bearer k-acme', tenant: undefined, dataset: undefined }, deps, 'ingest'))).toBe('unauthorized');
  });
});

describe('authenticate with the internal service key', () => {
  const withService: AuthDeps = { ...deps, serviceKey: 'svc-secret' };
  it.each([
    ['query scope: the named tenant and dataset', withService, 'query', 'ok'],
    ['another scope: refused like an unknown key', withService, 'ingest', 'unauthorized'],
    ['no scope asked: refused', withService, undefined, 'unauthorized'],
    ['no service key configured', { ...deps, serviceKey: '' }, 'query', 'unauthorized'],
    ['ingest where the process grants it (an acceptor, for the ruler)', { ...withService, serviceScopes: ['ingest'] }, 'ingest', 'ok'],
    ['query where the process grants ingest only', { ...withService, serviceScopes: ['ingest'] }, 'query', 'unauthorized'],
    ['delete, never granted', { ...withService, serviceScopes: ['ingest'] }, 'delete', 'unauthorized'],
  ] as const)('%s', async (_name, d, scope, expected) => {
    expect(await kindOf(authenticate({ authorization: 'Bearer svc-secret', tenant: 'acme', dataset: 'prod' }, d, scope))).toBe(expected);
  });
  it('acts as a reader of exactly the tenant and dataset the router names', async () => {
    expect(await authenticate({ authorization: 'Bearer svc-secret', tenant: 'acme', dataset: 'prod' }, withService, 'query')).toEqual({ tenant: 'acme', dataset: 'prod', principal: 'service', scopes: ['query'], isAdmin: false });
  });
});
