// Behaviour specific to the fs store; the common contract is in object-store.test.ts.

import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FsObjectStore } from './fs-store.ts';
import { tempDir } from './testing/stores.ts';

const enc = (s: string) => new TextEncoder().encode(s);

describe('FsObjectStore', () => {
  let dir: string;
  let root: string;
  let store: FsObjectStore;
  beforeEach(async () => {
    dir = await tempDir('fs-only');
    root = path.join(dir, 'not', 'yet', 'there');
    store = new FsObjectStore(root);
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps each object as the file <root>/<key>, creating directories as needed', async () => {
    await store.put('tables/t1/data/part-0.parquet', enc('parquet bytes'));
    const file = path.join(root, 'tables', 't1', 'data', 'part-0.parquet');
    expect(store.localPath('tables/t1/data/part-0.parquet')).toBe(file);
    expect(await readFile(file, 'utf8')).toBe('parquet bytes');
    expect(store.uri('tables/t1/data/part-0.parquet')).toBe(pathToFileURL(file).href);
    expect(store.uri('tables/t1/data/part-0.parquet').startsWith('file:///')).toBe(true);
  });

  it('lists the prefixes one level below a prefix in a deep tree, never those of a reserved area or holding no object', async () => {
    const keys = ['w/t1/d1/logs/metadata/0.json', 'w/t1/d1/logs/data/h=1/x.parquet', 'w/t1/d1/traces/metadata/0.json', 'w/t1/d2/logs/metadata/0.json', 'w/t2/d1/logs/metadata/0.json', 'w/t20/x', 'w/top'];
    for (const key of keys) await store.put(key, enc(key));
    expect(await store.listPrefixes('w/')).toEqual(['w/t1/', 'w/t2/', 'w/t20/']);
    expect(await store.listPrefixes('w/t1/')).toEqual(['w/t1/d1/', 'w/t1/d2/']);
    expect(await store.listPrefixes('w/t1/d1/')).toEqual(['w/t1/d1/logs/', 'w/t1/d1/traces/']);
    expect(await store.listPrefixes('w/t1/d1/logs/')).toEqual(['w/t1/d1/logs/data/', 'w/t1/d1/logs/metadata/']);
    // The temp area of puts is no prefix; a directory whose objects were deleted holds none.
    expect(await readdir(root)).toContain('.floe-tmp');
    expect(await store.listPrefixes('')).toEqual(['w/']);
    await store.deleteMany(['w/t1/d2/logs/metadata/0.json']);
    expect(await readdir(path.join(root, 'w', 't1', 'd2', 'logs'))).toEqual(['metadata']);
    expect(await store.listPrefixes('w/t1/')).toEqual(['w/t1/d1/']);
  });

  it('puts again after its directories were removed behind its back (remembered directories are re-made)', async () => {
    await store.put('a/b/one', enc('1'));
    await rm(path.join(root, 'a'), { recursive: true, force: true });
    await store.put('a/b/two', enc('2'));
    expect(await readFile(path.join(root, 'a', 'b', 'two'), 'utf8')).toBe('2');
    await rm(root, { recursive: true, force: true });
    await store.put('a/b/three', enc('3'));
    expect(await readFile(path.join(root, 'a', 'b', 'three'), 'utf8')).toBe('3');
  });

  it('leaves no temp files behind after put, putIfAbsent and putFile', async () => {
    await store.put('a/1', enc('1'));
    await store.putIfAbsent('a/2', enc('2'));
    await store.putIfAbsent('a/2', enc('2 again'));
    await store.putFile('a/3', store.localPath('a/1'));
    expect(await readdir(path.join(root, '.floe-tmp'))).toEqual([]);
    expect((await store.list('')).map((o) => o.key)).toEqual(['a/1', 'a/2', 'a/3']);
  });

  it('lets exactly one of many concurrent putIfAbsent calls win, with its whole body', async () => {
    const bodies = Array.from({ length: 25 }, (_, i) => enc(`writer-${i}-`.repeat(1000)));
    const results = await Promise.all(bodies.map((b) => store.putIfAbsent('race/marker', b)));
    const winners = results.flatMap((won, i) => (won ? [i] : []));
    expect(winners).toHaveLength(1);
    expect(await store.get('race/marker')).toEqual(bodies[winners[0]!]);
  });

  it('is visible to a second store on the same root (as another process would see it)', async () => {
    await store.put('shared/x', enc('from one'));
    const other = new FsObjectStore(root);
    expect(new TextDecoder().decode(await other.get('shared/x'))).toBe('from one');
    expect(other.keyFromUri(store.uri('shared/x'))).toBe('shared/x');
  });

  it('rejects file URIs outside the root, including the root itself', () => {
    expect(() => store.keyFromUri(pathToFileURL(path.join(dir, 'elsewhere')).href)).toThrow('outside the store root');
    expect(() => store.keyFromUri(pathToFileURL(root).href)).toThrow('outside the store root');
  });
});
