import { Message, MessageHeader, RecordBatch, RecordBatchStreamWriter, Table, tableFromIPC } from 'apache-arrow';
import type { Schema } from 'apache-arrow';
import { create, FlightDataSchema } from '@floe/proto';
import type { FlightData } from '@floe/proto';

/** One encapsulated IPC message: the flatbuffer `Message` and the body it describes. */
export interface IpcMessage {
  headerType: MessageHeader;
  header: Uint8Array;
  body: Uint8Array;
}

export type FlightSource = Table | Iterable<RecordBatch> | AsyncIterable<RecordBatch>;

const CONTINUATION = -1;
const PREFIX_BYTES = 8;

const align8 = (n: number) => (n + 7) & ~7;

/**
 * Splits an IPC stream into its messages, stopping at the end-of-stream marker. Accepts the
 * pre-0.15 framing (no continuation marker) as well. Header and body are views, not copies.
 */
export function* splitIpcStream(bytes: Uint8Array): Generator<IpcMessage> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 0;
  while (offset + 4 <= bytes.byteLength) {
    let metadataLength = view.getInt32(offset, true);
    offset += 4;
    if (metadataLength === CONTINUATION) {
      if (offset + 4 > bytes.byteLength) throw new Error('truncated Arrow IPC stream');
      metadataLength = view.getInt32(offset, true);
      offset += 4;
    }
    if (metadataLength === 0) return;
    if (metadataLength < 0 || offset + metadataLength > bytes.byteLength) throw new Error('truncated Arrow IPC stream');
    const header = bytes.subarray(offset, offset + metadataLength);
    offset += metadataLength;
    const message = Message.decode(header);
    const bodyLength = Number(message.bodyLength);
    if (offset + bodyLength > bytes.byteLength) throw new Error('truncated Arrow IPC stream');
    yield { headerType: message.headerType, header, body: bytes.subarray(offset, offset + bodyLength) };
    offset += bodyLength;
  }
}

function toFlightData(message: IpcMessage): FlightData {
  return create(FlightDataSchema, { dataHeader: message.header, dataBody: message.body });
}

function schemaMessage(schema: Schema): IpcMessage {
  const bytes = RecordBatchStreamWriter.writeAll(new Table(schema)).toUint8Array(true);
  const first = splitIpcStream(bytes).next();
  if (first.done || first.value.headerType !== MessageHeader.Schema) throw new Error('Arrow writer produced no schema message');
  return first.value;
}

/**
 * The encapsulated IPC form of a schema (continuation, length, flatbuffer), as
 * FlightInfo.schema and SchemaResult.schema carry it.
 */
export function ipcSchemaBytes(schema: Schema): Uint8Array {
  const bytes = RecordBatchStreamWriter.writeAll(new Table(schema)).toUint8Array(true);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return bytes.slice(0, PREFIX_BYTES + view.getInt32(4, true));
}

// Each batch goes through its own writer so that batches can be encoded as they arrive; the
// writer's repeated schema message is dropped, its dictionary batches kept (the stream format
// lets a later dictionary batch replace an earlier one with the same id).
function batchMessages(batch: RecordBatch, schema: Schema): IpcMessage[] {
  if (batch.schema !== schema && batch.schema.fields.length !== schema.fields.length) {
    throw new TypeError(`record batch has ${batch.schema.fields.length} columns, the stream schema ${schema.fields.length}`);
  }
  // Rebinding to the stream schema makes dictionary ids agree with the schema message even when
  // each batch was built with its own dictionary types.
  const bound = batch.schema === schema ? batch : new RecordBatch(schema, batch.data);
  const bytes = RecordBatchStreamWriter.writeAll([bound]).toUint8Array(true);
  return [...splitIpcStream(bytes)].filter((m) => m.headerType !== MessageHeader.Schema);
}

/**
 * Turns a table or a stream of record batches into Flight `FlightData` messages: the schema
 * first (always, so an empty result still carries its columns), then dictionary and record
 * batch messages. `schema` is required for a batch stream and defaults to the table's.
 */
export async function* encodeFlightData(source: FlightSource, schema?: Schema): AsyncGenerator<FlightData> {
  const streamSchema = schema ?? (source instanceof Table ? source.schema : undefined);
  if (streamSchema === undefined) throw new TypeError('encodeFlightData needs a schema for a record batch stream');
  yield toFlightData(schemaMessage(streamSchema));
  const batches = source instanceof Table ? source.batches : source;
  for await (const batch of batches) {
    for (const message of batchMessages(batch, streamSchema)) yield toFlightData(message);
  }
}

function framed(header: Uint8Array, body: Uint8Array): Uint8Array[] {
  // Sizes are rounded to 8 so every body starts 8-aligned, as the IPC format requires; padding a
  // flatbuffer with trailing zeros is harmless.
  const headerLength = align8(header.byteLength);
  const prefix = new Uint8Array(PREFIX_BYTES + headerLength);
  const view = new DataView(prefix.buffer);
  view.setInt32(0, CONTINUATION, true);
  view.setInt32(4, headerLength, true);
  prefix.set(header, PREFIX_BYTES);
  // The reader consumes exactly bodyLength bytes, so a sender that trimmed or over-padded the
  // body must not shift the next message.
  const bodyLength = Number(Message.decode(header).bodyLength);
  if (body.byteLength === bodyLength) return bodyLength === 0 ? [prefix] : [prefix, body];
  const exact = new Uint8Array(bodyLength);
  exact.set(body.subarray(0, bodyLength));
  return [prefix, exact];
}

/** Reassembles FlightData messages into IPC stream chunks (ending with the end-of-stream marker). */
export function flightDataToIpc(messages: Iterable<FlightData>): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  let sawSchema = false;
  for (const message of messages) {
    // FlightData with only app_metadata carries no IPC message.
    if (message.dataHeader.byteLength === 0) continue;
    if (!sawSchema) {
      if (Message.decode(message.dataHeader).headerType !== MessageHeader.Schema) {
        throw new Error('Flight stream did not start with a schema message');
      }
      sawSchema = true;
    }
    chunks.push(...framed(message.dataHeader, message.dataBody));
  }
  if (!sawSchema) throw new Error('Flight stream ended without a schema message');
  chunks.push(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0));
  return chunks;
}

/** Decodes a complete Flight data stream into a table (zero rows when only the schema came). */
export function decodeFlightData(messages: Iterable<FlightData>): Table {
  return tableFromIPC(flightDataToIpc(messages));
}
