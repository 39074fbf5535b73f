import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { floeConfigSchema, type FloeConfig } from './schema.ts';

export const ENV_PREFIX = 'FLOE__';

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export interface LoadOptions {
  /** Path of a YAML file; omitted means defaults plus environment. */
  file?: string;
  /** Environment to read FLOE__SECTION__KEY overrides from (process.env by default). */
  env?: Record<string, string | undefined>;
  /** Values applied last (tests, CLI flags), in the same nested shape as the file. */
  overrides?: Record<string, unknown>;
}

type Tree = Record<string, unknown>;
const isTree = (v: unknown): v is Tree => typeof v === 'object' && v !== null && !Array.isArray(v);

function merge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = isTree(v) && isTree(out[k]) ? merge(out[k] as Tree, v) : v;
  }
  return out;
}

/**
 * `FLOE__WRITER__FLUSH_INTERVAL=5s` sets writer.flush_interval. Values are read as YAML scalars
 * or flow collections, so numbers, booleans and lists (`[a, b]`) keep their types.
 */
export function envToTree(env: Record<string, string | undefined>): Tree {
  const tree: Tree = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || raw === undefined) continue;
    const path = name.slice(ENV_PREFIX.length).toLowerCase().split('__').filter(Boolean);
    if (path.length === 0) continue;
    let node = tree;
    for (const part of path.slice(0, -1)) {
      if (!isTree(node[part])) node[part] = {};
      node = node[part] as Tree;
    }
    let value: unknown = raw;
    try {
      value = raw === '' ? '' : parseYaml(raw);
    } catch {
      value = raw;
    }
    // A value that YAML reads as a map or null is almost certainly meant as text.
    if (value === null || isTree(value)) value = raw;
    node[path[path.length - 1]!] = value;
  }
  return tree;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const child of Object.values(v)) deepFreeze(child);
  }
  return v;
}

/** Rules that span keys; each problem names the key to fix. */
function crossChecks(cfg: FloeConfig): string[] {
  const problems: string[] = [];
  if (cfg.meta.kind === 'pg' && !cfg.meta.url) problems.push('meta.url: required when meta.kind is "pg"');
  if (cfg.storage.kind === 's3' && !cfg.storage.s3.bucket) problems.push('storage.s3.bucket: required when storage.kind is "s3"');
  if (cfg.writer.flush_interval <= 0) problems.push('writer.flush_interval: must be > 0');
  if (cfg.writer.poll_interval <= 0) problems.push('writer.poll_interval: must be > 0');
  if (cfg.writer.wal_marker_retention <= 0) problems.push('writer.wal_marker_retention: must be > 0');
  if (cfg.writer.member_ttl <= 0) problems.push('writer.member_ttl: must be > 0');
  if (cfg.compactor.member_ttl <= 0) problems.push('compactor.member_ttl: must be > 0');
  if (cfg.querier.query_timeout <= 0) problems.push('querier.query_timeout: must be > 0');
  if (cfg.router.query_timeout <= 0) problems.push('router.query_timeout: must be > 0');
  // The telemetry is sent as tenant _system, which only the break-glass key may write.
  if (cfg.self_monitoring.enabled && !cfg.auth.admin_api_key) problems.push('auth.admin_api_key: required when self_monitoring.enabled is true');
  // With the profiling section on, self-profiling is skipped (nothing is written to _system).
  if (cfg.self_monitoring.profiles_enabled && !cfg.profiling.enabled && !cfg.auth.admin_api_key) problems.push('auth.admin_api_key: required when self_monitoring.profiles_enabled is true');
  if (cfg.self_monitoring.export_interval <= 0) problems.push('self_monitoring.export_interval: must be > 0');
  if (cfg.self_monitoring.profile_interval <= 0) problems.push('self_monitoring.profile_interval: must be > 0');
  if (cfg.profiling.interval <= 0) problems.push('profiling.interval: must be > 0');
  return problems;
}

/** Loads, merges (file < env < overrides), validates every key and deep-freezes the result. */
export function loadConfig(opts: LoadOptions = {}): Readonly<FloeConfig> {
  let fromFile: Tree = {};
  if (opts.file) {
    let text: string;
    try {
      text = readFileSync(opts.file, 'utf8');
    } catch (err) {
      throw new ConfigError([`config file ${opts.file}: ${(err as Error).message}`]);
    }
    let parsed: unknown;
    try {
      parsed = parseYaml(text);
    } catch (err) {
      throw new ConfigError([`config file ${opts.file}: not valid YAML: ${(err as Error).message}`]);
    }
    if (parsed !== null && parsed !== undefined && !isTree(parsed)) {
      throw new ConfigError([`config file ${opts.file}: top level must be a mapping of sections`]);
    }
    fromFile = (parsed as Tree | null) ?? {};
  }
  const merged = merge(merge(fromFile, envToTree(opts.env ?? process.env)), opts.overrides ?? {});
  const result = floeConfigSchema.safeParse(merged);
  if (!result.success) throw new ConfigError(issueLines(result.error.issues));
  const problems = crossChecks(result.data);
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(result.data);
}

/** Zod issues as `key.path: message` lines, unknown keys one line each, under `prefix` if given. */
export function issueLines(issues: readonly z.core.$ZodIssue[], prefix: readonly string[] = []): string[] {
  return issues.map((issue) => {
    const base = [...prefix, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((k) => `${base ? `${base}.` : ''}${k}: unknown key`).join('\n  ');
    }
    return `${base || '(root)'}: ${issue.message}`;
  });
}
