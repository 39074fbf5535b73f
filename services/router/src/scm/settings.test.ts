import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@floe/config';
import { scmSettingsFrom } from './settings.ts';

const problemsOf = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
};

const pkcs1 = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
const full = { app_id: 7, app_slug: 'floe', private_key: pkcs1, client_id: 'Iv1.x', client_secret: 's' };
const load = (scm: Record<string, unknown>) => loadConfig({ env: {}, overrides: { scm } });

describe('scm section', () => {
  it('unset: no integration', () => {
    expect(scmSettingsFrom(load({}).scm)).toBeUndefined();
  });

  it.each([
    [{ app_id: '7' }, ['scm.app_slug: required when the scm section is set', 'scm.client_id: required when the scm section is set', 'scm.client_secret: required when the scm section is set', 'scm.private_key_path: set exactly one of scm.private_key_path and scm.private_key']],
    [{ ...full, client_secret: '' }, ['scm.client_secret: required when the scm section is set']],
    [{ ...full, private_key_path: '/k.pem' }, ['scm.private_key_path: set exactly one of scm.private_key_path and scm.private_key']],
    [{ private_key: pkcs1 }, ['scm.app_id: required when the scm section is set', 'scm.app_slug: required when the scm section is set', 'scm.client_id: required when the scm section is set', 'scm.client_secret: required when the scm section is set']],
  ])('a partial section fails start naming each setting (%#)', (scm, problems) => {
    expect(problemsOf(() => load(scm))).toEqual(problems);
  });

  it('reads a numeric app id from the environment as text, and takes a PKCS#1 key as PKCS#8', () => {
    const { app_id: _fromEnv, ...rest } = full;
    const cfg = loadConfig({ env: { FLOE__SCM__APP_ID: '12345' }, overrides: { scm: rest } });
    const s = scmSettingsFrom(cfg.scm)!;
    expect(s.appId).toBe('12345');
    expect(s.privateKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(s).toMatchObject({ apiUrl: 'https://api.github.com', webUrl: 'https://github.com', linkStateTtlMs: 600_000, snippetCacheTtlMs: 600_000, snippetCacheCapacity: 1000 });
  });

  it('reads private_key_path, and a bad key fails naming the setting', () => {
    const dir = mkdtempSync(join(tmpdir(), 'floe-scm-'));
    const path = join(dir, 'app.pem');
    writeFileSync(path, pkcs1);
    expect(scmSettingsFrom(load({ ...full, private_key: '', private_key_path: path }).scm)!.privateKey).toMatch(/BEGIN PRIVATE KEY/);
    expect(problemsOf(() => scmSettingsFrom(load({ ...full, private_key: '', private_key_path: join(dir, 'missing.pem') }).scm))[0]).toMatch(/^scm\.private_key_path: cannot read/);
    expect(problemsOf(() => scmSettingsFrom(load({ ...full, private_key: 'not a key' }).scm))).toEqual(['scm.private_key: not a PEM private key']);
    expect(problemsOf(() => scmSettingsFrom(load({ ...full, api_url: 'ftp://x' }).scm))).toEqual(['scm.api_url: not an http(s) URL: "ftp://x"']);
  });
});
