import { Int32, MessageHeader, RecordBatchStreamWriter, Schema, Table, tableFromArrays, tableFromIPC, Utf8, vectorFromArray } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { decodeFlightData, encodeFlightData, ipcSchemaBytes, splitIpcStream } from './ipc-messages.ts';
import type { FlightData } from '@floe/proto';
import { rows, sampleTable } from './test-tables.ts';

async function collect(source: AsyncIterable<FlightData>): Promise<FlightData[]> {
  const out: FlightData[] = [];
  for await (const message of source) out.push(message);
  return out;
}

describe('IPC messages', () => {
  it('splits a writer stream into schema and batch messages with 8-aligned headers', () => {
    const table = sampleTable();
    const bytes = RecordBatchStreamWriter.writeAll(table).toUint8Array(true);
    const messages = [...splitIpcStream(bytes)];
    expect(messages.map((m) => m.headerType)).toEqual([MessageHeader.Schema, MessageHeader.RecordBatch]);
    expect(messages[0]!.body.byteLength).toBe(0);
    for (const m of messages) expect(m.header.byteLength % 8).toBe(0);
  });

  it('round-trips a table with int64, utf8, float64, timestamp and map columns and nulls', async () => {
    const table = sampleTable();
    const flight = await collect(encodeFlightData(table));
    expect(flight).toHaveLength(2);
    expect(flight[0]!.dataBody.byteLength).toBe(0);
    const decoded = decodeFlightData(flight);
    expect(decoded.schema.fields.map((f) => `${f.name}:${f.type}`)).toEqual(table.schema.fields.map((f) => `${f.name}:${f.type}`));
    expect(rows(decoded)).toEqual(rows(table));
    expect(rows(decoded)[1]).toEqual({ id: 9007199254740993n, name: null, ratio: null, ts: null, attrs: null });
  });

  it('encodes each batch of a stream as it comes, under the declared schema', async () => {
    const a = new Table({ n: vectorFromArray([1, 2], new Int32()), s: vectorFromArray(['a', 'b'], new Utf8()) });
    const b = new Table({ n: vectorFromArray([3], new Int32()), s: vectorFromArray(['c'], new Utf8()) });
    async function* batches() {
      yield* a.batches;
      yield* b.batches;
    }
    const flight = await collect(encodeFlightData(batches(), a.schema));
    expect(flight).toHaveLength(3);
    const decoded = decodeFlightData(flight);
    expect(decoded.batches).toHaveLength(2);
    expect(decoded.getChild('s')?.toArray()).toEqual(['a', 'b', 'c']);
  });

  it('encodes an empty result as the schema alone', async () => {
    const schema = sampleTable().schema;
    const flight = await collect(encodeFlightData([], schema));
    expect(flight).toHaveLength(1);
    const decoded = decodeFlightData(flight);
    expect(decoded.numRows).toBe(0);
    expect(decoded.schema.fields.map((f) => f.name)).toEqual(['id', 'name', 'ratio', 'ts', 'attrs']);
    expect(decodeFlightData(await collect(encodeFlightData(new Table(schema)))).numRows).toBe(0);
  });

  it('keeps dictionary-encoded columns decodable when each batch brings its own dictionary', async () => {
    const first = tableFromArrays({ level: ['info', 'warn', 'info'] });
    // Same dictionary type (and id), different dictionary contents.
    const second = new Table({ level: vectorFromArray(['error', 'debug'], first.schema.fields[0]!.type) });
    // Built on its own, so its dictionary id differs from the stream schema's.
    const third = tableFromArrays({ level: ['trace'] });
    expect(String(first.schema.fields[0]?.type)).toMatch(/Dictionary/);
    const batches = [...first.batches, ...second.batches, ...third.batches];
    const decoded = decodeFlightData(await collect(encodeFlightData(batches, first.schema)));
    expect(decoded.getChild('level')?.toArray()).toEqual(['info', 'warn', 'info', 'error', 'debug', 'trace']);
  });

  it('rejects a batch whose column count differs from the stream schema', async () => {
    const schema = sampleTable().schema;
    const other = tableFromArrays({ n: Int32Array.of(1) });
    await expect(collect(encodeFlightData(other.batches, schema))).rejects.toThrow(/columns/);
  });

  it('tolerates unpadded headers and trimmed bodies from other senders and skips metadata-only messages', async () => {
    const flight = await collect(encodeFlightData(sampleTable()));
    const tampered = flight.map((m) => ({ ...m, dataBody: m.dataBody.subarray(0, Math.max(0, m.dataBody.byteLength - 3)) }));
    const extra = { ...flight[0]!, dataHeader: new Uint8Array(0), dataBody: new Uint8Array(0), appMetadata: Uint8Array.of(1) };
    const decoded = decodeFlightData([tampered[0]!, extra, tampered[1]!]);
    expect(decoded.numRows).toBe(3);
    expect(decoded.getChild('name')?.get(0)).toBe('checkout');
  });

  it('rejects a stream without a schema', () => {
    expect(() => decodeFlightData([])).toThrow(/schema/);
  });

  it('encapsulates a schema for FlightInfo.schema', () => {
    const schema: Schema = sampleTable().schema;
    const bytes = ipcSchemaBytes(schema);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    expect(view.getInt32(0, true)).toBe(-1);
    expect(view.getInt32(4, true)).toBe(bytes.byteLength - 8);
    expect(tableFromIPC(bytes).schema.fields.map((f) => f.name)).toEqual(['id', 'name', 'ratio', 'ts', 'attrs']);
  });
});
