// One behavioural suite for every ObjectStore implementation: a temp-dir fs store and S3 stores
// against a real s3rver (with a key prefix and tiny list pages, and with the V1 listing API).

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InvalidKeyError, ObjectNotFoundError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';
import { startS3Server } from './testing/s3-server.ts';
import type { TestS3Server } from './testing/s3-server.ts';
import { backends, tempDir } from './testing/stores.ts';
import type { OpenedStore } from './testing/stores.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

let s3: TestS3Server;
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3?.stop();
});

describe.each(backends)('ObjectStore: $name', (backend) => {
  let opened: OpenedStore;
  let store: ObjectStore;
  beforeEach(async () => {
    opened = await backend.open(s3);
    store = opened.store;
  });
  afterEach(async () => {
    await opened.cleanup();
  });

  it('stores and returns the exact bytes, including every byte value and empty objects', async () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    await store.put('bin/all-bytes', all);
    await store.put('bin/empty', new Uint8Array(0));
    expect(await store.get('bin/all-bytes')).toEqual(all);
    expect(await store.get('bin/empty')).toEqual(new Uint8Array(0));
    expect(await store.head('bin/all-bytes')).toMatchObject({ key: 'bin/all-bytes', size: 256 });
    expect((await store.head('bin/empty'))?.size).toBe(0);
  });

  it('overwrites on put', async () => {
    await store.put('k', enc('first version'));
    await store.put('k', enc('second'));
    expect(dec(await store.get('k'))).toBe('second');
    expect((await store.head('k'))?.size).toBe(6);
  });

  it('answers undefined for missing objects and rejects ranged reads of them', async () => {
    await store.put('present/x', enc('x'));
    expect(await store.get('missing')).toBeUndefined();
    expect(await store.get('present')).toBeUndefined(); // a "directory" is not an object
    expect(await store.head('missing/deeper')).toBeUndefined();
    await expect(store.getRange('missing', 0, 10)).rejects.toBeInstanceOf(ObjectNotFoundError);
  });

  it('reads an object into memory it is given, and answers undefined for a missing key or a directory', async () => {
    const bytes = new Uint8Array(200_000).map((_, i) => (i * 31) & 0xff);
    await store.put('wal/seg-1', bytes);
    const memory = new Uint8Array(300_000).fill(0xee);
    const asked: number[] = [];
    const got = await store.get('wal/seg-1', (n) => {
      asked.push(n);
      return memory.subarray(50_000, 50_000 + n);
    });
    expect(asked).toEqual([200_000]);
    expect(got!.buffer).toBe(memory.buffer);
    expect(got!.byteOffset).toBe(50_000);
    expect(Buffer.from(got!).equals(Buffer.from(bytes))).toBe(true);
    expect(memory[49_999]).toBe(0xee);
    expect(memory[250_000]).toBe(0xee);
    const never = () => {
      throw new Error('alloc called');
    };
    expect(await store.get('wal/none', never)).toBeUndefined();
    expect(await store.get('wal', never)).toBeUndefined(); // a "directory" is not an object
    expect(await store.get('wa', never)).toBeUndefined();
  });

  const body = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) % 256);
  it.each([
    { offset: 0, length: 10, from: 0, to: 10 },
    { offset: 500, length: 250, from: 500, to: 750 },
    { offset: 990, length: 100, from: 990, to: 1000 }, // clipped at the end
    { offset: 999, length: 1, from: 999, to: 1000 },
    { offset: 1000, length: 5, from: 0, to: 0 }, // at the end: empty
    { offset: 5000, length: 5, from: 0, to: 0 }, // past the end: empty
    { offset: 10, length: 0, from: 0, to: 0 },
  ])('getRange($offset, $length) returns bytes [$from, $to)', async ({ offset, length, from, to }) => {
    await store.put('ranged/object', body);
    expect(await store.getRange('ranged/object', offset, length)).toEqual(body.slice(from, to));
  });

  it('lists by plain string prefix, sorted by key, with sizes', async () => {
    const keys = ['a/b/1', 'a/b/2', 'a/bc/3', 'a/c', 'b/x', 'a/b/sub/deep'];
    for (const [i, key] of keys.entries()) await store.put(key, new Uint8Array(i + 1));
    const listed = async (prefix: string) => (await store.list(prefix)).map((o) => [o.key, o.size]);
    expect(await listed('a/b')).toEqual([['a/b/1', 1], ['a/b/2', 2], ['a/b/sub/deep', 6], ['a/bc/3', 3]]);
    expect(await listed('a/b/')).toEqual([['a/b/1', 1], ['a/b/2', 2], ['a/b/sub/deep', 6]]);
    expect(await listed('')).toEqual([
      ['a/b/1', 1], ['a/b/2', 2], ['a/b/sub/deep', 6], ['a/bc/3', 3], ['a/c', 4], ['b/x', 5],
    ]);
    expect(await listed('nothing/')).toEqual([]);
    expect(await listed('a/c')).toEqual([['a/c', 4]]);
    const withDates = await store.list('b/');
    expect(withDates[0]?.lastModified).toBeInstanceOf(Date);
  });

  it('lists the prefixes one level below a prefix, without the objects under them', async () => {
    // Objects one level below each prefix listed: s3rver 3.7.1 groups no deeper key under a
    // common prefix (AWS S3 and MinIO do; fs-store.test.ts covers deep trees on the fs store).
    const keys = ['w/t1/a', 'w/t1/b', 'w/t2/a', 'w/t20/a', 'w/top', 'other/a'];
    for (const key of keys) await store.put(key, enc(key));
    for (let i = 0; i < 5; i++) await store.put(`w/many${i}/k`, enc('k'));
    expect(await store.listPrefixes('w/')).toEqual([...[0, 1, 2, 3, 4].map((i) => `w/many${i}/`), 'w/t1/', 'w/t2/', 'w/t20/']);
    expect(await store.listPrefixes('w/t2')).toEqual(['w/t2/', 'w/t20/']);
    expect(await store.listPrefixes('')).toEqual(['other/', 'w/']);
    expect(await store.listPrefixes('w/t1/')).toEqual([]);
    expect(await store.listPrefixes('nothing/')).toEqual([]);
    // A prefix whose every object is deleted is gone (the fs store keeps the directory).
    await store.deleteMany(['w/t20/a']);
    expect(await store.listPrefixes('w/t2')).toEqual(['w/t2/']);
  });

  it('lists many keys across pages in order', async () => {
    const keys = Array.from({ length: 25 }, (_, i) => `many/${String(i).padStart(3, '0')}`);
    await Promise.all([...keys].reverse().map((key) => store.put(key, enc(key))));
    expect((await store.list('many/')).map((o) => o.key)).toEqual(keys);
  });

  it('sorts by UTF-8 bytes, the order S3 uses', async () => {
    // U+FB01 sorts before U+1F600 in UTF-8 (EF.. < F0..) but after it in UTF-16 (FB01 > D83D).
    // Two keys only: s3rver 3.7.1 itself loses astral-plane keys across V2 page boundaries.
    const keys = ['u/\ufb01', 'u/\u{1F600}'];
    for (const key of [...keys].reverse()) await store.put(key, enc(key));
    expect((await store.list('u/')).map((o) => o.key)).toEqual(keys);
  });

  it('deletes one or many keys and tolerates missing ones', async () => {
    for (const key of ['d/1', 'd/2', 'd/3', 'd/4']) await store.put(key, enc(key));
    await store.delete('d/1');
    await store.delete('d/1');
    await store.delete('never/existed');
    await store.deleteMany(['d/2', 'd/3', 'd/missing']);
    await store.deleteMany([]);
    expect((await store.list('d/')).map((o) => o.key)).toEqual(['d/4']);
    expect(await store.get('d/2')).toBeUndefined();
  });

  it('putIfAbsent writes only when the key is free', async () => {
    expect(await store.putIfAbsent('markers/m1', enc('winner'))).toBe(true);
    expect(await store.putIfAbsent('markers/m1', enc('loser'))).toBe(false);
    expect(dec(await store.get('markers/m1'))).toBe('winner');
    await store.delete('markers/m1');
    expect(await store.putIfAbsent('markers/m1', enc('again'))).toBe(true);
    expect(dec(await store.get('markers/m1'))).toBe('again');
    // Bookkeeping objects (fs temp files, the S3 probe) never show up in listings.
    expect((await store.list('')).map((o) => o.key)).toEqual(['markers/m1']);
  });

  it.each(['plain/key.parquet', 'with space/and%percent', 'unicode/\u00e9t\u00e9/\u{1F600}.json', 'a+b=c&d'])(
    'uri() and keyFromUri() are inverse for %j',
    async (key) => {
      await store.put(key, enc('x'));
      const uri = store.uri(key);
      expect(uri).toMatch(store.kind === 'fs' ? /^file:\/\/\// : /^s3:\/\//);
      expect(store.keyFromUri(uri)).toBe(key);
      expect(dec(await store.get(store.keyFromUri(uri)))).toBe('x');
    },
  );

  it('rejects URIs of other locations', () => {
    const foreign = store.kind === 'fs' ? 'file:///somewhere/else/x' : 's3://another-bucket/x';
    expect(() => store.keyFromUri(foreign)).toThrow(InvalidKeyError);
    expect(() => store.keyFromUri('http://example.com/x')).toThrow(InvalidKeyError);
  });

  it.each([
    ['a parent segment', '../escape'],
    ['an inner parent segment', 'a/../../b'],
    ['an absolute path', '/etc/passwd'],
    ['a backslash', 'a\\b'],
    ['NUL', 'a\0b'],
    ['an empty key', ''],
    ['an empty segment', 'a//b'],
    ['a trailing slash', 'a/b/'],
    ['a dot segment', 'a/./b'],
    ['a reserved top-level name', '.floe-tmp/x'],
  ])('rejects a key with %s', async (_, key) => {
    await expect(store.put(key, enc('x'))).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(store.get(key)).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(store.putIfAbsent(key, enc('x'))).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidKeyError);
    expect(() => store.uri(key)).toThrow(InvalidKeyError);
    await expect(store.list('../')).rejects.toBeInstanceOf(InvalidKeyError);
  });

  it('uploads a local file with putFile and leaves the source in place', async () => {
    const dir = await tempDir('putfile');
    try {
      const src = path.join(dir, 'part-0.parquet');
      const content = randomBytes(3 * 1024 * 1024 + 17);
      await writeFile(src, content);
      await store.putFile('tables/t/data/part-0.parquet', src);
      const stored = await store.get('tables/t/data/part-0.parquet');
      expect(stored?.byteLength).toBe(content.byteLength);
      expect(Buffer.from(stored!).equals(content)).toBe(true);
      expect(existsSync(src)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('exposes a local path only for the fs store', async () => {
    await store.put('local/thing', enc('on disk'));
    const local = store.localPath('local/thing');
    if (store.kind === 'fs') {
      expect(path.isAbsolute(local!)).toBe(true);
      expect(await readFile(local!, 'utf8')).toBe('on disk');
    } else {
      expect(local).toBeUndefined();
    }
  });
});
