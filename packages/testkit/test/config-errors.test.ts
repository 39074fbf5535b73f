import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTestAuthority, runFloeCli } from '../src/index.ts';

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

  it('checks the TLS files at start: both or neither, readable, a certificate and its own key, client authorities only with them', async () => {
    const ca = makeTestAuthority();
    const one = ca.issue('one', ['localhost']);
    const two = ca.issue('two', ['localhost']);
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ FLOE__TLS__CERT_FILE: one.certFile }, /tls\.key_file: set both tls\.cert_file and tls\.key_file, or neither/],
      [{ FLOE__TLS__CERT_FILE: join(ca.dir, 'absent.pem'), FLOE__TLS__KEY_FILE: one.keyFile }, /tls\.cert_file: cannot read .*absent\.pem/],
      [{ FLOE__TLS__CERT_FILE: one.keyFile, FLOE__TLS__KEY_FILE: one.keyFile }, /tls\.cert_file: .* holds no PEM certificate/],
      [{ FLOE__TLS__CERT_FILE: one.certFile, FLOE__TLS__KEY_FILE: two.keyFile }, /tls\.key_file: .* is not the private key of the certificate/],
      [{ FLOE__TLS__CA_FILE: one.keyFile }, /tls\.ca_file: .* holds no PEM certificate/],
      [{ FLOE__TLS__CLIENT_CA_FILE: ca.caFile }, /tls\.client_ca_file: client certificates are asked for on TLS ports only/],
      [{ FLOE__TLS__CERT_FILE: one.certFile, FLOE__TLS__KEY_FILE: one.keyFile, FLOE__TLS__CLIENT_CA_FILE: join(ca.dir, 'absent.pem') }, /tls\.client_ca_file: cannot read .*absent\.pem/],
      [{ FLOE__TLS__CERT_FILE: one.certFile, FLOE__TLS__KEY_FILE: one.keyFile, FLOE__TLS__CLIENT_CA_FILE: one.keyFile }, /tls\.client_ca_file: .* holds no PEM certificate/],
    ];
    for (const [env, message] of cases) {
      const r = await runFloeCli(['acceptor'], env);
      expect(r.code, JSON.stringify(env)).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });
});
