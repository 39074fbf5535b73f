import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDurationMs } from './index.ts';

const tmpFile = (text: string) => {
  const p = join(mkdtempSync(join(tmpdir(), 'floe-cfg-')), 'floe.yaml');
  writeFileSync(p, text);
  return p;
};

const problemsOf = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
};

describe('loadConfig', () => {
  it('gives a working embedded default with no file', () => {
    const cfg = loadConfig({ env: {} });
    expect(cfg.meta.kind).toBe('pglite');
    expect(cfg.storage.kind).toBe('fs');
    expect(cfg.router.port).toBe(3000);
    expect(cfg.acceptor.grpc_port).toBe(4317);
    expect(cfg.acceptor.http_port).toBe(4318);
    expect(cfg.querier.port).toBe(50054);
    expect(cfg.writer.ingest_dedup_window).toBe(3_600_000);
    expect(Object.isFrozen(cfg.writer)).toBe(true);
  });

  it('merges file < env < overrides, with typed env values', () => {
    const file = tmpFile('writer:\n  flush_interval: 10s\n  max_rows_per_file: 1000\nrouter:\n  port: 3100\n');
    const cfg = loadConfig({
      file,
      env: { FLOE__WRITER__FLUSH_INTERVAL: '3s', FLOE__ROUTER__QUERIER_URLS: '[a:1, b:2]', FLOE__STORAGE__S3__REGION: 'eu-west-1', HOME: '/x' },
      overrides: { router: { port: 0 } },
    });
    expect(cfg.writer.flush_interval).toBe(3000);
    expect(cfg.writer.max_rows_per_file).toBe(1000);
    expect(cfg.router.querier_urls).toEqual(['a:1', 'b:2']);
    expect(cfg.storage.s3.region).toBe('eu-west-1');
    expect(cfg.router.port).toBe(0);
  });

  it.each([
    [{ FLOE__WRITER__FLUSH_INTERVAL: 'soon' }, 'writer.flush_interval'],
    [{ FLOE__ROUTER__PORT: '70000' }, 'router.port'],
    [{ FLOE__ROUTER__PORTT: '1' }, 'router.portt: unknown key'],
    [{ FLOE__NOPE__X: '1' }, 'nope: unknown key'],
    [{ FLOE__META__KIND: 'pg' }, 'meta.url: required'],
    [{ FLOE__LOG__LEVEL: 'loud' }, 'log.level'],
    [{ FLOE__SELF_MONITORING__ENABLED: 'true' }, 'auth.admin_api_key: required when self_monitoring.enabled is true'],
    [{ FLOE__SELF_MONITORING__PROFILES_ENABLED: 'true' }, 'auth.admin_api_key: required when self_monitoring.profiles_enabled is true'],
    [{ FLOE__WRITER__WAL_MARKER_RETENTION: '0s' }, 'writer.wal_marker_retention: must be > 0'],
    [{ FLOE__WRITER__MEMBER_TTL: '0s' }, 'writer.member_ttl: must be > 0'],
    [{ FLOE__COMPACTOR__MEMBER_TTL: '0s' }, 'compactor.member_ttl: must be > 0'],
    [{ FLOE__PROFILING__INTERVAL: '0s' }, 'profiling.interval: must be > 0'],
    [{ FLOE__PROFILING__ENABLED: 'true' }, 'profiling.endpoint: required when profiling.enabled'],
  ])('rejects %o naming the key', (env, needle) => {
    const problems = problemsOf(() => loadConfig({ env }));
    expect(problems.join('\n')).toContain(needle);
  });

  it('needs no admin key for self-profiling that the profiling section overrides (nothing goes to _system)', () => {
    const cfg = loadConfig({ env: { FLOE__SELF_MONITORING__PROFILES_ENABLED: 'true', FLOE__PROFILING__ENABLED: 'true', FLOE__PROFILING__ENDPOINT: 'http://pyroscope:4040' } });
    expect(cfg.profiling.enabled).toBe(true);
  });

  it('reports every problem at once', () => {
    const problems = problemsOf(() => loadConfig({ env: { FLOE__ROUTER__PORT: 'x', FLOE__WRITER__POLL_INTERVAL: 'y' } }));
    expect(problems.some((p) => p.startsWith('router.port'))).toBe(true);
    expect(problems.some((p) => p.startsWith('writer.poll_interval'))).toBe(true);
  });

  it('rejects a file that is not a mapping', () => {
    expect(problemsOf(() => loadConfig({ file: tmpFile('- a\n- b\n'), env: {} }))[0]).toContain('top level must be a mapping');
  });
});

describe('parseDurationMs', () => {
  it.each([
    ['500ms', 500],
    ['5s', 5000],
    ['1h30m', 5_400_000],
    ['0s', 0],
    ['1.5s', 1500],
    ['x', undefined],
    ['5', undefined],
    ['', undefined],
  ])('%s → %s', (text, ms) => expect(parseDurationMs(text)).toBe(ms));
});
