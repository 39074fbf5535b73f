import type { FloeConfig } from '@floe/config';
import type { Db } from '@floe/meta';
import type { Logger } from '@floe/telemetry';
import { MemoryTokenBuckets, type TokenBuckets } from '@floe/limits';
import { InstallationBudget } from './budget.ts';
import { FileCache } from './file-cache.ts';
import { createScmHost, type ScmHost } from './host.ts';
import { scmSettingsFrom, type ScmSettings } from './settings.ts';
import { InstallationTokens } from './tokens.ts';

/**
 * The source-control integration's process state, made once per router when the scm section is
 * set: the host client, the in-memory installation tokens and the file cache. Routes receive it
 * through plugin options; nothing here is a module singleton.
 */
export interface Scm {
  settings: ScmSettings;
  db: Db;
  host: ScmHost;
  tokens: InstallationTokens;
  cache: FileCache;
  log: Logger;
}

/**
 * `buckets`: where the installations' request budgets live (the limits store, shared by every
 * router in a cluster); `host` replaces the real host client (tests).
 */
export function createScm(settings: ScmSettings, db: Db, log: Logger, buckets: TokenBuckets = new MemoryTokenBuckets(), host?: ScmHost): Scm {
  // The budget knows an installation by its token, which the tokens below mint through the host.
  let tokens: InstallationTokens | undefined;
  const budget = new InstallationBudget(buckets, (token) => tokens?.installationOf(token), settings.requestsPerHour);
  const client = host ?? createScmHost(settings, budget);
  tokens = new InstallationTokens((id) => client.mintToken(id));
  return {
    settings,
    db,
    host: client,
    tokens,
    cache: new FileCache(settings.snippetCacheTtlMs, settings.snippetCacheCapacity),
    log,
  };
}

/** Stops every use of an installation's credentials at once: its token and its cached files go. */
export function forgetInstallation(scm: Scm, installationId: number): void {
  scm.tokens.forget(installationId);
  scm.cache.evictInstallation(installationId);
}

/** The integration of a router's configuration, or undefined when the scm section is unset. */
export function scmFromConfig(config: Readonly<FloeConfig>, db: Db, log: Logger, buckets?: TokenBuckets): Scm | undefined {
  const settings = scmSettingsFrom(config.scm);
  return settings && createScm(settings, db, log, buckets);
}
