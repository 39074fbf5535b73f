import { describe, expect, it } from 'vitest';
import { Lru } from '@floe/storage';
import { metadataFileName, metadataVersion, newSnapshotId, newTableMetadata, parseTableMetadata, serializeTableMetadata, withMetadataLog } from './metadata.ts';
import type { Schema } from './types.ts';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'ts', required: true, type: 'timestamptz' }, { id: 2, name: 'tags', required: false, type: { type: 'list', 'element-id': 3, element: 'string', 'element-required': false } }] };

describe('table metadata JSON', () => {
  it('keeps 64-bit snapshot ids exact through parse and serialize', () => {
    const big = 2n ** 62n + 12345n;
    const m = newTableMetadata({ location: 's3://b/wh/t', schema, partitionSpec: { fields: [{ 'source-id': 1, name: 'ts_hour', transform: 'hour' }] } });
    expect(m['last-column-id']).toBe(3);
    expect(m['partition-specs'][0]!.fields[0]!['field-id']).toBe(1000);
    expect(m['last-partition-id']).toBe(1000);
    const text0 = serializeTableMetadata(m);
    expect(JSON.parse(text0)['current-snapshot-id']).toBe(-1);
    expect(parseTableMetadata(text0)['current-snapshot-id']).toBeNull();

    const withSnap = {
      ...m,
      'current-snapshot-id': big,
      snapshots: [{ 'snapshot-id': big, 'parent-snapshot-id': big - 1n, 'sequence-number': 1, 'timestamp-ms': 1, 'manifest-list': 'x', summary: { operation: 'append' } }],
      refs: { main: { 'snapshot-id': big, type: 'branch' as const } },
    };
    const text = serializeTableMetadata(withSnap);
    expect(text).toContain(`"current-snapshot-id": ${big}`);
    const back = parseTableMetadata(text);
    expect(back['current-snapshot-id']).toBe(big);
    expect(back.snapshots[0]!['parent-snapshot-id']).toBe(big - 1n);
    expect(back.refs.main!['snapshot-id']).toBe(big);
    expect(back['last-updated-ms']).toBe(m['last-updated-ms']);
  });

  it('rejects other format versions and fills optional fields', () => {
    expect(() => parseTableMetadata('{"format-version": 1}')).toThrow(/only v2/);
    const minimal = parseTableMetadata(JSON.stringify({ 'format-version': 2, 'current-snapshot-id': 5, schemas: [], snapshots: [] }));
    expect(minimal.refs).toEqual({ main: { 'snapshot-id': 5n, type: 'branch' } });
    expect(minimal['metadata-log']).toEqual([]);
  });

  it('names metadata files by version and bounds the metadata log', () => {
    expect(metadataFileName(3)).toMatch(/^00003-[0-9a-f-]{36}\.metadata\.json$/);
    expect(metadataVersion('file:///w/t/metadata/00042-1b2c.metadata.json')).toBe(42);
    expect(metadataVersion('s3://b/t/metadata/v7.metadata.json')).toBe(7);
    expect(metadataVersion('s3://b/t/metadata/weird.json')).toBe(-1);
    let m = newTableMetadata({ location: 'x', schema, properties: { 'write.metadata.previous-versions-max': '2' } });
    for (let i = 0; i < 5; i++) m = withMetadataLog(m, m, `loc${i}`);
    expect(m['metadata-log'].map((e) => e['metadata-file'])).toEqual(['loc3', 'loc4']);
    const id = newSnapshotId();
    expect(id > 0n && id < 2n ** 53n).toBe(true);
  });
});

describe('Lru', () => {
  it('evicts least recently used entries by weight', () => {
    const lru = new Lru<string, number[]>(5, (v) => v.length);
    lru.set('a', [1, 2]);
    lru.set('b', [1, 2]);
    expect(lru.get('a')).toEqual([1, 2]); // a is now newest
    lru.set('c', [1, 2]); // total 6 > 5: evict b
    expect(lru.get('b')).toBeUndefined();
    expect(lru.get('a')).toBeDefined();
    lru.set('huge', [1, 2, 3, 4, 5, 6]); // bigger than the cache: not kept
    expect(lru.get('huge')).toBeUndefined();
    expect(lru.size).toBe(2);
  });
});
