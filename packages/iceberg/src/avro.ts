// Avro object container files (Avro 1.11 spec "Object Container Files"), written and read here so
// that the `avro.schema` header keeps Iceberg's `field-id` / `element-id` attributes exactly as
// given. avsc does the record encoding; Avro longs are bigints so snapshot ids stay exact.
//
//   file   := magic "Obj\x01", meta map<bytes> (avro.schema, avro.codec, user keys), 16-byte sync,
//             then blocks
//   block  := record count (long), byte size (long), records (possibly compressed), sync

import { randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync, zstdDecompressSync } from 'node:zlib';
import avro from 'avsc';
import { InvalidMetadataError } from './errors.ts';

export type AvroSchema = Record<string, unknown>;
export type AvroCodec = 'null' | 'deflate';

/** Avro long as bigint on read; accepts bigint or a safe-integer number on write. */
const BIGINT_LONG = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(0),
  toBuffer: (n: bigint | number) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(typeof n === 'bigint' ? n : BigInt(n));
    return buf;
  },
  fromJSON: (v: unknown) => BigInt(v as string | number),
  toJSON: (n: bigint) => (n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString()),
  isValid: (n: unknown) => typeof n === 'bigint' || (typeof n === 'number' && Number.isSafeInteger(n)),
  compare: (a: bigint | number, b: bigint | number) => (a < b ? -1 : a > b ? 1 : 0),
});

const MAGIC = Buffer.from([0x4f, 0x62, 0x6a, 0x01]); // "Obj" 1
const HEADER = avro.Type.forSchema({
  type: 'record',
  name: 'org.apache.avro.file.Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
  ],
});
const LONG = avro.Type.forSchema('long');
const BLOCK_TARGET_BYTES = 64 * 1024;

const typeCache = new Map<string, avro.Type>();

/** An avsc type for a schema, with bigint longs. Cached by the schema's JSON text. */
export function avroType(schema: AvroSchema | string): avro.Type {
  const text = typeof schema === 'string' ? schema : JSON.stringify(schema);
  let type = typeCache.get(text);
  if (!type) {
    type = avro.Type.forSchema(JSON.parse(text) as avro.Schema, { registry: { long: BIGINT_LONG }, wrapUnions: 'auto' });
    if (typeCache.size > 256) typeCache.clear();
    typeCache.set(text, type);
  }
  return type;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Encodes records into an Avro object container file. */
export function writeAvroFile(schema: AvroSchema, records: Iterable<unknown>, options: { metadata?: Record<string, string>; codec?: AvroCodec } = {}): Uint8Array {
  const codec = options.codec ?? 'deflate';
  const schemaText = JSON.stringify(schema);
  const type = avroType(schemaText);
  const meta: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(options.metadata ?? {})) meta[k] = Buffer.from(v, 'utf8');
  meta['avro.schema'] = Buffer.from(schemaText, 'utf8');
  meta['avro.codec'] = Buffer.from(codec, 'utf8');
  const sync = randomBytes(16);
  const parts: Buffer[] = [HEADER.toBuffer({ magic: MAGIC, meta, sync })];

  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = (): void => {
    if (pending.length === 0) return;
    const raw = Buffer.concat(pending);
    const body = codec === 'deflate' ? deflateRawSync(raw) : raw;
    parts.push(LONG.toBuffer(pending.length), LONG.toBuffer(body.length), body, sync);
    pending = [];
    pendingBytes = 0;
  };
  for (const record of records) {
    const buf = type.toBuffer(record);
    pending.push(buf);
    pendingBytes += buf.length;
    if (pendingBytes >= BLOCK_TARGET_BYTES) flush();
  }
  flush();
  const out = Buffer.concat(parts);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

export interface AvroFile<T> {
  /** The writer schema from the header, as parsed JSON (keeps field-id attributes). */
  schema: AvroSchema;
  /** User metadata from the header (avro.* keys excluded). */
  metadata: Record<string, string>;
  records: T[];
}

function decompress(codec: string, body: Buffer): Buffer {
  switch (codec) {
    case 'null':
      return body;
    case 'deflate':
      return inflateRawSync(body);
    case 'zstandard':
      return zstdDecompressSync(body);
    default:
      throw new InvalidMetadataError(`unsupported Avro codec ${codec}`);
  }
}

/** Decodes an Avro object container file with its own (writer) schema. */
export function readAvroFile<T = Record<string, unknown>>(bytes: Uint8Array): AvroFile<T> {
  const buf = asBuffer(bytes);
  if (buf.length < 4 || !buf.subarray(0, 4).equals(MAGIC)) throw new InvalidMetadataError('not an Avro object container file');
  const header = HEADER.decode(buf, 0) as { value: { meta: Record<string, Buffer>; sync: Buffer } | undefined; offset: number };
  if (!header.value || header.offset < 0) throw new InvalidMetadataError('truncated Avro header');
  const { meta, sync } = header.value;
  const schemaBuf = meta['avro.schema'];
  if (!schemaBuf) throw new InvalidMetadataError('Avro file has no schema');
  const schemaText = schemaBuf.toString('utf8');
  const codec = meta['avro.codec']?.toString('utf8') || 'null';
  const type = avroType(schemaText);
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(meta)) if (!k.startsWith('avro.')) metadata[k] = v.toString('utf8');

  const records: T[] = [];
  let pos = header.offset;
  while (pos < buf.length) {
    const count = LONG.decode(buf, pos) as { value: number; offset: number };
    const size = LONG.decode(buf, count.offset) as { value: number; offset: number };
    if (count.offset < 0 || size.offset < 0) throw new InvalidMetadataError('truncated Avro block header');
    const start = size.offset;
    const end = start + size.value;
    if (end + 16 > buf.length) throw new InvalidMetadataError('truncated Avro block');
    const block = decompress(codec, buf.subarray(start, end));
    let p = 0;
    for (let i = 0; i < count.value; i++) {
      const r = type.decode(block, p) as { value: T; offset: number };
      if (r.offset < 0) throw new InvalidMetadataError('truncated Avro record');
      records.push(r.value);
      p = r.offset;
    }
    if (!buf.subarray(end, end + 16).equals(sync)) throw new InvalidMetadataError('Avro sync marker mismatch');
    pos = end + 16;
  }
  return { schema: JSON.parse(schemaText) as AvroSchema, metadata, records };
}
