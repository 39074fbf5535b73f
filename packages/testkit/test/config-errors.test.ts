import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFloeCli } from '../src/index.ts';

/** An invalid or unknown configuration value stops `floe` at start with a message naming the key. */
describe('floe refuses a bad configuration', () => {
  it.each([
    [{ FLOE__ROUTER__PORT: 'not-a-port' }, /router\.port/],
    [{ FLOE__WRITER__FLUSH_INTERVAL: 'soon' }, /writer\.flush_interval: not a duration/],
    [{ FLOE__ROUTER__NOPE: '1' }, /router\.nope: unknown key/],
    [{ FLOE__META__KIND: 'pg' }, /meta\.url: required when meta\.kind is "pg"/],
    [{ FLOE__LIMITS__RETENTION_STREAM: '[{"selector":"service_name=x","period":"1d"}]' }, /limits\.retention_stream\[0\]\.selector: parse error/],
    [{ FLOE__LIMITS__RETENTION_STREAM: '[{"selector":"{a=\\"b\\"}","period":"0s"}]' }, /limits\.retention_stream\.0\.period: must be longer than 0s/],
  ])('%o', async (env, message) => {
    const r = await runFloeCli(['router'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('names keys from the file too', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'floe-cfg-')), 'floe.yaml');
    writeFileSync(file, 'querier:\n  threads: many\n');
    const r = await runFloeCli(['querier', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/querier\.threads/);
  });
});
