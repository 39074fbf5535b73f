import { describe, expect, it } from 'vitest';
import { FileCache } from './file-cache.ts';
import { decodeLines, normalisePath, parseRepository } from './source-context.ts';
import { InstallationTokens } from './tokens.ts';

describe('parseRepository', () => {
  it.each([
    ['acme/api', 'acme/api'],
    [' acme/api.git ', 'acme/api'],
    ['https://github.com/acme/api', 'acme/api'],
    ['https://github.com/acme/api.git', 'acme/api'],
    ['https://github.com/acme/api/tree/main/src', 'acme/api'],
    ['github.com/acme/api', 'acme/api'],
    ['git@github.com:acme/api.git', 'acme/api'],
    ['ssh://git@ghe.example.com/acme/api.git', 'acme/api'],
    ['acme', undefined],
    ['https://github.com/acme', undefined],
    ['acme/../etc', undefined],
    ['a c/api', undefined],
  ])('%s → %s', (input, want) => {
    expect(parseRepository(input)).toBe(want);
  });
});

describe('normalisePath', () => {
  it.each([
    ['src/app.ts', 'src/app.ts'],
    ['/src/app.ts', 'src/app.ts'],
    ['./src//app.ts', 'src/app.ts'],
    ['src\\win\\file.cs', 'src/win/file.cs'],
    ['../secret', undefined],
    ['/', undefined],
  ])('%s → %s', (input, want) => {
    expect(normalisePath(input)).toBe(want);
  });
});

describe('decodeLines', () => {
  it.each([
    ['a\nb\n', ['a', 'b']],
    ['a\r\nb', ['a', 'b']],
    ['', ['']],
    ['\ufeffbom\n', ['bom']],
  ])('%j → %j', (text, lines) => {
    expect(decodeLines(Buffer.from(text, 'utf8'))).toEqual(lines);
  });
  it.each([
    ['a NUL byte (binary)', Buffer.from([0x61, 0x00, 0x62])],
    ['invalid UTF-8', Buffer.from([0x63, 0xe9])],
  ])('refuses %s', (_name, bytes) => {
    expect(decodeLines(bytes)).toBeUndefined();
  });
});

describe('FileCache', () => {
  const key = (path: string, installationId = 1) => ({ installationId, repository: 'acme/api', ref: undefined, path });
  const file = (text: string) => ({ kind: 'file' as const, lines: [text], url: 'u' });

  it('evicts the least recently used entry beyond capacity', () => {
    const cache = new FileCache(60_000, 2);
    cache.set(key('a'), file('a'));
    cache.set(key('b'), file('b'));
    expect(cache.get(key('a'))).toEqual(file('a')); // a is now the most recent
    cache.set(key('c'), file('c'));
    expect([cache.get(key('a')), cache.get(key('b')), cache.get(key('c'))]).toEqual([file('a'), undefined, file('c')]);
  });

  it('expires entries after the TTL and keys by ref', () => {
    let now = 0;
    const cache = new FileCache(1000, 10, () => now);
    cache.set(key('a'), file('a'));
    expect(cache.get({ ...key('a'), ref: 'v1' })).toBeUndefined();
    now = 999;
    expect(cache.get(key('a'))).toEqual(file('a'));
    now = 1000;
    expect(cache.get(key('a'))).toBeUndefined();
  });

  it('evicts every entry of a removed installation and no other', () => {
    const cache = new FileCache(60_000, 10);
    cache.set(key('a', 1), file('a'));
    cache.set(key('b', 1), file('b'));
    cache.set(key('a', 2), file('a2'));
    cache.evictInstallation(1);
    expect([cache.get(key('a', 1)), cache.get(key('b', 1)), cache.get(key('a', 2))]).toEqual([undefined, undefined, file('a2')]);
  });
});

describe('InstallationTokens', () => {
  it('reuses a token until five minutes before expiry, shares a mint, and forgets on removal', async () => {
    let now = 0;
    let minted = 0;
    const tokens = new InstallationTokens(async () => ({ token: `t${++minted}`, expiresAt: new Date(60 * 60_000) }), () => now);
    expect(await Promise.all([tokens.get(1), tokens.get(1)])).toEqual(['t1', 't1']);
    now = 55 * 60_000 - 1;
    expect(await tokens.get(1)).toBe('t1');
    now = 55 * 60_000;
    expect(await tokens.get(1)).toBe('t2');
    tokens.forget(1);
    expect(await tokens.get(1)).toBe('t3');
  });
});
