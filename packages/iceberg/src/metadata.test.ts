import { describe, expect, it } from 'vitest';
import { Lru } from '@floe/storage';
import { withSnapshot } from './append.ts';
import { withoutSnapshots } from './expire.ts';
import { metadataFileName, metadataVersion, newSnapshotId, newTableMetadata, parseTableMetadata, serializeTableMetadata, tableMetadataBytes, withMetadataLog } from './metadata.ts';
import type { Schema, Snapshot, TableMetadata } from './types.ts';

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

  it('reads long ids exactly whether a JSON number holds them or not, at any depth', () => {
    const safe = 2n ** 53n - 1n;
    const big = 2n ** 63n - 2n;
    const text = `{"format-version": 2, "current-snapshot-id": ${safe}, "snapshots": [{"snapshot-id": ${safe}, "sequence-number": 1, "summary": {"snapshot-id": "7"}}],
      "refs": {"main": {"snapshot-id": ${safe}, "type": "branch"}}, "statistics": [{"snapshot-id": 12, "statistics-path": "s"}]}`;
    const m = parseTableMetadata(text);
    expect(m['current-snapshot-id']).toBe(safe);
    expect(m.snapshots[0]!['snapshot-id']).toBe(safe);
    expect(m.snapshots[0]!['sequence-number']).toBe(1);
    expect(m.snapshots[0]!.summary).toEqual({ 'snapshot-id': '7' });
    expect((m as unknown as { statistics: Array<{ 'snapshot-id': bigint }> }).statistics[0]!['snapshot-id']).toBe(12n);
    // One id a number cannot hold: every id read from its digits.
    const mixed = parseTableMetadata(text.replace(`"refs": {"main": {"snapshot-id": ${safe}`, `"refs": {"main": {"snapshot-id": ${big}`));
    expect(mixed.refs.main!['snapshot-id']).toBe(big);
    expect(mixed.snapshots[0]!['snapshot-id']).toBe(safe);
    expect(() => parseTableMetadata('{"format-version": 2, "current-snapshot-id": 1.5}')).toThrow(/not valid JSON/);
  });

  it("writes every commit's metadata as JSON.stringify's two-space layout of it, after expiry and a reread too", () => {
    const layout = (m: TableMetadata) => JSON.stringify({ ...m, 'current-snapshot-id': m['current-snapshot-id'] ?? -1n }, (_k, v: unknown) => (typeof v === 'bigint' ? (JSON as unknown as { rawJSON(t: string): unknown }).rawJSON(String(v)) : v), 2);
    const written = (m: TableMetadata) => new TextDecoder().decode(tableMetadataBytes(m));
    let m = newTableMetadata({ location: 'file:///w/t', schema, nowMs: 1000 });
    expect(written(m)).toBe(layout(m));
    const commit = (i: number) => {
      const parent = m['current-snapshot-id'];
      const snapshot: Snapshot = {
        'snapshot-id': i % 2 === 0 ? newSnapshotId() : 2n ** 62n + BigInt(i),
        ...(parent !== null ? { 'parent-snapshot-id': parent } : {}),
        'sequence-number': i + 1,
        'timestamp-ms': 2000 + i,
        'manifest-list': `file:///w/t/metadata/snap-${i}.avro`,
        // Text a line break, a quote and characters beyond ASCII must not break the layout.
        summary: { operation: 'append', 'floe.wal-segments': `{"acc-${i}":[[${i},${i}]]}`, note: `line\nbreak "é" ${'\u{1F600}'} \u2028` },
        'schema-id': 0,
      };
      m = withMetadataLog(withSnapshot(m, snapshot, 2000 + i), m, `file:///w/t/metadata/${metadataFileName(i)}`);
    };
    for (let i = 0; i < 6; i++) {
      commit(i);
      expect(written(m)).toBe(layout(m));
      // Written again (a commit attempt retried on the same metadata): the same.
      expect(written(m)).toBe(layout(m));
    }
    // Read back from its file, then committed to again and again.
    m = parseTableMetadata(written(m));
    for (let i = 6; i < 9; i++) {
      commit(i);
      expect(written(m)).toBe(layout(m));
    }
    // Older snapshots expired: the arrays lose their first elements.
    m = withoutSnapshots(m, new Set(m.snapshots.slice(-2).map((x) => x['snapshot-id'])), 3000);
    expect(m.snapshots).toHaveLength(2);
    expect(written(m)).toBe(layout(m));
    commit(9);
    expect(written(m)).toBe(layout(m));
    expect(serializeTableMetadata(m)).toBe(layout(m));
    expect(parseTableMetadata(written(m))).toEqual(m);
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
