import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError, type FloeConfig } from '@floe/config';

/**
 * The scm section once it is known to be set, with the private key read and normalised. The
 * config schema checks which keys are filled; what needs I/O or parsing (the key file, the PEM
 * itself) is checked here, once at start, so a broken key fails start naming its setting instead
 * of failing the first link hours later.
 */
export interface ScmSettings {
  appId: string;
  appSlug: string;
  /** PKCS#8 PEM: Octokit's JWT signer takes only PKCS#8, while the host hands out PKCS#1 keys. */
  privateKey: string;
  clientId: string;
  clientSecret: string;
  apiUrl: string;
  webUrl: string;
  linkStateTtlMs: number;
  snippetCacheTtlMs: number;
  snippetCacheCapacity: number;
  requestsPerHour: number;
}

// Reported like every other invalid setting: start fails with the key path first.
const invalid = (key: string, detail: string) => new ConfigError([`${key}: ${detail}`]);

const trimSlash = (url: string) => url.replace(/\/+$/, '');

/** undefined when the section is unset (its endpoints then answer 404). */
export function scmSettingsFrom(cfg: FloeConfig['scm']): ScmSettings | undefined {
  if (cfg.app_id === '') return undefined;
  const key = cfg.private_key_path ? 'scm.private_key_path' : 'scm.private_key';
  let pem = cfg.private_key;
  if (cfg.private_key_path) {
    try {
      pem = readFileSync(cfg.private_key_path, 'utf8');
    } catch (err) {
      throw invalid(key, `cannot read ${cfg.private_key_path}: ${(err as Error).message}`);
    }
  }
  let privateKey: string;
  try {
    privateKey = createPrivateKey(pem).export({ type: 'pkcs8', format: 'pem' }).toString();
  } catch {
    throw invalid(key, 'not a PEM private key');
  }
  for (const [k, v] of [['scm.api_url', cfg.api_url], ['scm.web_url', cfg.web_url]] as const) {
    if (!/^https?:\/\/[^/?#]+/i.test(v)) throw invalid(k, `not an http(s) URL: ${JSON.stringify(v)}`);
  }
  return {
    appId: cfg.app_id,
    appSlug: cfg.app_slug,
    privateKey,
    clientId: cfg.client_id,
    clientSecret: cfg.client_secret,
    apiUrl: trimSlash(cfg.api_url),
    webUrl: trimSlash(cfg.web_url),
    linkStateTtlMs: cfg.link_state_ttl,
    snippetCacheTtlMs: cfg.snippet_cache_ttl,
    snippetCacheCapacity: cfg.snippet_cache_capacity,
    requestsPerHour: cfg.requests_per_hour,
  };
}
