import { Readable } from 'node:stream';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { serializeLong } from './bounds.ts';
import { decodeManifest, decodeManifestList, encodeManifest, encodeManifestList } from './manifest-avro.ts';
import type { ManifestEntry, ManifestFile, PartitionSpec, Schema } from './types.ts';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'timestamp', required: true, type: 'timestamptz' },
    { id: 3, name: 'service', required: false, type: 'string' },
  ],
};
const spec: PartitionSpec = {
  'spec-id': 0,
  fields: [
    { 'source-id': 2, 'field-id': 1000, name: 'timestamp_hour', transform: 'hour' },
    { 'source-id': 3, 'field-id': 1001, name: 'service', transform: 'identity' },
  ],
};

/** Decodes an Avro container with avsc's own stream decoder (an independent reader). */
async function avscDecode(bytes: Uint8Array): Promise<{ header: Record<string, string>; records: unknown[] }> {
  const decoder = new avro.streams.BlockDecoder({ parseHook: (s: unknown) => avro.Type.forSchema(s as avro.Schema, { wrapUnions: 'auto' }) });
  const header: Record<string, string> = {};
  const records: unknown[] = [];
  decoder.on('metadata', (_type: unknown, _codec: string, h: { meta: Record<string, Buffer> }) => {
    for (const [k, v] of Object.entries(h.meta)) header[k] = v.toString('utf8');
  });
  decoder.on('data', (r: unknown) => records.push(r));
  await new Promise<void>((ok, fail) => {
    decoder.on('end', ok).on('error', fail);
    Readable.from([Buffer.from(bytes)]).pipe(decoder);
  });
  return { header, records };
}

describe('manifest Avro', () => {
  const entries: ManifestEntry[] = [
    {
      status: 1,
      snapshotId: 123n,
      sequenceNumber: null,
      fileSequenceNumber: null,
      dataFile: {
        content: 0,
        filePath: 'file:///w/t/data/a.parquet',
        fileFormat: 'PARQUET',
        partition: { timestamp_hour: 493921, service: 'checkout' },
        recordCount: 10,
        fileSizeInBytes: 1234,
        columnSizes: { 1: 100, 2: 200 },
        valueCounts: { 1: 10 },
        nullValueCounts: { 3: 2 },
        lowerBounds: { 1: serializeLong(1) },
        upperBounds: { 1: serializeLong(10) },
      },
    },
    {
      status: 0,
      snapshotId: 99n,
      sequenceNumber: 4,
      fileSequenceNumber: 4,
      dataFile: {
        content: 0,
        filePath: 'file:///w/t/data/b.parquet',
        fileFormat: 'PARQUET',
        partition: { timestamp_hour: 493920, service: null },
        recordCount: 5,
        fileSizeInBytes: 999,
      },
    },
  ];

  it('round-trips entries and writes the spec field ids', async () => {
    const bytes = encodeManifest(entries, { spec, schema });
    const decoded = decodeManifest(bytes, spec);
    expect(decoded.entries).toEqual(entries);
    expect(decoded.metadata['format-version']).toBe('2');
    expect(JSON.parse(decoded.metadata['partition-spec']!)).toEqual(spec.fields);

    const { header, records } = await avscDecode(bytes);
    expect(records).toHaveLength(2);
    const s = JSON.parse(header['avro.schema']!);
    const byName = (fields: Array<Record<string, unknown>>, n: string) => fields.find((f) => f.name === n)!;
    expect(byName(s.fields, 'status')['field-id']).toBe(0);
    expect(byName(s.fields, 'snapshot_id')['field-id']).toBe(1);
    expect(byName(s.fields, 'sequence_number')['field-id']).toBe(3);
    expect(byName(s.fields, 'file_sequence_number')['field-id']).toBe(4);
    const dataFile = byName(s.fields, 'data_file');
    expect(dataFile['field-id']).toBe(2);
    const df = (dataFile.type as { fields: Array<Record<string, unknown>> }).fields;
    const ids = Object.fromEntries(df.map((f) => [f.name, f['field-id']]));
    expect(ids).toMatchObject({ content: 134, file_path: 100, file_format: 101, partition: 102, record_count: 103, file_size_in_bytes: 104, column_sizes: 108, value_counts: 109, null_value_counts: 110, nan_value_counts: 137, lower_bounds: 125, upper_bounds: 128, key_metadata: 131, split_offsets: 132, equality_ids: 135, sort_order_id: 140 });
    const partition = byName(df, 'partition').type as { fields: Array<Record<string, unknown>> };
    expect(partition.fields.map((f) => [f.name, f['field-id'], f.type])).toEqual([
      ['timestamp_hour', 1000, ['null', 'int']],
      ['service', 1001, ['null', 'string']],
    ]);
    const lower = (byName(df, 'lower_bounds').type as unknown[])[1] as Record<string, unknown>;
    expect(lower.logicalType).toBe('map');
    const kv = (lower.items as { fields: Array<Record<string, unknown>> }).fields;
    expect(kv.map((f) => f['field-id'])).toEqual([126, 127]);
  });

  it('round-trips a manifest list with field ids 500+', async () => {
    const mf: ManifestFile = {
      manifestPath: 'file:///w/t/metadata/x-m0.avro',
      manifestLength: 4321,
      partitionSpecId: 0,
      content: 0,
      sequenceNumber: 3,
      minSequenceNumber: 3,
      addedSnapshotId: 2n ** 62n + 5n, // beyond 2^53: must stay exact
      addedFilesCount: 2,
      existingFilesCount: 0,
      deletedFilesCount: 0,
      addedRowsCount: 15,
      existingRowsCount: 0,
      deletedRowsCount: 0,
      partitions: [{ containsNull: false, containsNan: false, lowerBound: Uint8Array.of(1, 0, 0, 0), upperBound: Uint8Array.of(2, 0, 0, 0) }],
      keyMetadata: null,
    };
    const bytes = encodeManifestList([mf], { snapshotId: 7n, parentSnapshotId: null, sequenceNumber: 3 });
    expect(decodeManifestList(bytes)).toEqual([mf]);
    const { header } = await avscDecode(encodeManifestList([{ ...mf, addedSnapshotId: 5n }], { snapshotId: 7n, parentSnapshotId: null, sequenceNumber: 3 }));
    expect(header['snapshot-id']).toBe('7');
    const s = JSON.parse(header['avro.schema']!) as { fields: Array<Record<string, unknown>> };
    expect(Object.fromEntries(s.fields.map((f) => [f.name, f['field-id']]))).toEqual({
      manifest_path: 500, manifest_length: 501, partition_spec_id: 502, content: 517, sequence_number: 515, min_sequence_number: 516,
      added_snapshot_id: 503, added_files_count: 504, existing_files_count: 505, deleted_files_count: 506, added_rows_count: 512,
      existing_rows_count: 513, deleted_rows_count: 514, partitions: 507, key_metadata: 519,
    });
  });
});
