import { describe, expect, it } from 'vitest';
import { icebergSchema, lastColumnId, parquetFieldIds, partitionSpec, tracesTable } from './index.ts';

describe('traces table forms', () => {
  it('has unique field ids across columns and map children', () => {
    const ids = [
      ...tracesTable.columns.map((c) => c.id),
      ...Object.values(tracesTable.mapIds).flatMap((m) => [m.keyId, m.valueId]),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    expect(lastColumnId(tracesTable)).toBe(Math.max(...ids));
  });

  it('derives an Iceberg schema whose map fields carry key and value ids', () => {
    const s = icebergSchema(tracesTable);
    const attr = s.fields.find((f) => f.name === 'span_attr_int')!;
    expect(attr.type).toMatchObject({ type: 'map', key: 'string', value: 'long' });
    expect(s.fields.find((f) => f.name === 'timestamp')).toMatchObject({ id: 1, type: 'timestamptz', required: true });
  });

  it('partitions by hour of the µs timestamp', () => {
    expect(partitionSpec(tracesTable).fields).toEqual([{ 'source-id': 1, 'field-id': 1000, name: 'timestamp_hour', transform: 'hour' }]);
  });

  it('prints FIELD_IDS for COPY with map children', () => {
    expect(parquetFieldIds(tracesTable)).toContain('"span_attr_str": {__duckdb_field_id: 17, key: ');
  });
});
