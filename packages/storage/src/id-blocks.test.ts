import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from './fs-store.ts';
import { IdBlocksIndex, IdBlocksWriter, findIdPayload, readIdPayload } from './id-blocks.ts';

const dir = mkdtempSync(join(tmpdir(), 'floe-id-blocks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const store = new FsObjectStore(join(dir, 'store'));

const hexId = (n: number) => n.toString(16).padStart(32, '0');

async function build(name: string, entries: Array<[string, string]>, blockBytes: number, meta: unknown = { columns: ['a'] }) {
  const path = join(dir, `${name}.blk`);
  const w = await IdBlocksWriter.create(path, blockBytes);
  for (const [id, payload] of entries) await w.add(id, payload);
  const size = await w.finish(meta);
  await store.putFile(name, path);
  return { size, index: (await IdBlocksIndex.load(store, name))! };
}

describe('id blocks', () => {
  it('finds every id in its one block, and nothing for absent ids', async () => {
    const entries: Array<[string, string]> = [];
    for (let i = 0; i < 2000; i += 2) entries.push([hexId(i * 7919), JSON.stringify([[`span-${i}`, { 'k\tv': 'a\nb' }], [`span-${i}b`, null]])]);
    const { size, index } = await build('many', entries, 4096);
    expect(index.blockCount).toBeGreaterThan(10);
    expect(index.meta).toEqual({ columns: ['a'] });
    expect((await store.head('many'))!.size).toBe(size);
    for (const [id, payload] of entries) {
      const read = await readIdPayload(store, 'many', index, id);
      expect(read.payload).toBe(payload);
      expect(read.bytesRead).toBeGreaterThan(0);
    }
    // Between two ids, before the first (no block at all) and after the last.
    expect((await readIdPayload(store, 'many', index, hexId(7919))).payload).toBeUndefined();
    expect((await readIdPayload(store, 'many', index, '')).payload).toBeUndefined();
    expect(await readIdPayload(store, 'many', index, hexId(0).slice(0, 31))).toEqual({ payload: undefined, bytesRead: 0 });
    expect((await readIdPayload(store, 'many', index, 'f'.repeat(32))).payload).toBeUndefined();
  });

  it('an empty file has no blocks and answers every id with nothing', async () => {
    const { index } = await build('empty', [], 4096, {});
    expect(index.blockCount).toBe(0);
    expect(await readIdPayload(store, 'empty', index, hexId(1))).toEqual({ payload: undefined, bytesRead: 0 });
  });

  it('refuses ids out of order or payloads with a newline', async () => {
    const w = await IdBlocksWriter.create(join(dir, 'bad.blk'));
    await w.add(hexId(2), '[]');
    await expect(w.add(hexId(1), '[]')).rejects.toThrow(/out of order/);
    await expect(w.add(hexId(3), '[\n]')).rejects.toThrow(/newlines/);
    await w.abort();
  });

  it('an id matches whole, never as the prefix of a longer id', () => {
    const block = `abc\tone\nabcd\ttwo\n`;
    expect(findIdPayload(block, 'abc')).toBe('one');
    expect(findIdPayload(block, 'abcd')).toBe('two');
    expect(findIdPayload(block, 'ab')).toBeUndefined();
    expect(findIdPayload(block, 'bcd')).toBeUndefined();
  });

  it('an absent object has no index; a damaged one is an error', async () => {
    expect(await IdBlocksIndex.load(store, 'missing')).toBeUndefined();
    await store.put('damaged', new Uint8Array(40).fill(7));
    await expect(IdBlocksIndex.load(store, 'damaged')).rejects.toThrow(/bad magic/);
  });
});
