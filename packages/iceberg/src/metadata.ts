// Table metadata files (Iceberg table spec v2, "Table Metadata"): creating, parsing and writing
// them, and the small lookups every commit needs.
//
// Snapshot ids are 64-bit longs. Engines pick them at random over the whole positive range, which
// JSON.parse would round, so they are parsed exactly as bigint (JSON.parse source access) and
// written back as raw JSON numbers (JSON.rawJSON).

import { randomBytes, randomUUID } from 'node:crypto';
import { Lru } from '@floe/storage';
import { IcebergError, InvalidMetadataError } from './errors.ts';
import type { IcebergType, PartitionSpec, Schema, Snapshot, SortOrder, TableMetadata } from './types.ts';

const LONG_ID_KEYS = new Set(['snapshot-id', 'parent-snapshot-id', 'current-snapshot-id']);

/** Property that bounds the metadata-log (same name and default as Java). */
export const PREVIOUS_VERSIONS_MAX = 'write.metadata.previous-versions-max';
const DEFAULT_PREVIOUS_VERSIONS_MAX = 100;
/**
 * Property asking that metadata files the log drops be deleted (same name as Java, default false).
 * Commits here never delete: the compactor's pass honours it (services/compactor/src/expire.ts).
 */
export const DELETE_AFTER_COMMIT = 'write.metadata.delete-after-commit.enabled';

/** Whether the table asks for dropped metadata files to be deleted (Java reads the flag case-insensitively). */
export const deletesDroppedMetadata = (m: TableMetadata): boolean => m.properties[DELETE_AFTER_COMMIT]?.toLowerCase() === 'true';

/**
 * Turns the long ids of a plainly parsed tree into bigints, in place; false (the tree then only
 * partly converted) when one is not a safe integer, whose exact value the parse has lost.
 */
function longIdsToBigInt(node: unknown): boolean {
  if (typeof node !== 'object' || node === null) return true;
  if (Array.isArray(node)) {
    for (const v of node) if (!longIdsToBigInt(v)) return false;
    return true;
  }
  const o = node as Record<string, unknown>;
  for (const key in o) {
    const v = o[key];
    if (typeof v === 'number') {
      if (!LONG_ID_KEYS.has(key)) continue;
      if (!Number.isSafeInteger(v)) return false;
      o[key] = BigInt(v);
    } else if (!longIdsToBigInt(v)) return false;
  }
  return true;
}

/**
 * Parses a metadata JSON file (format version 2). A writer re-reads a table's metadata, which
 * repeats every retained snapshot, on each commit: a reviver, called for every value, made the
 * parse six times as costly as JSON.parse's, so it only reads the ids whose value a number cannot
 * hold exactly (engines that pick ids over the whole long range).
 */
export function parseTableMetadata(text: string): TableMetadata {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
    if (!longIdsToBigInt(raw)) {
      raw = JSON.parse(text, (key: string, value: unknown, context?: { source?: string }) => {
        if (LONG_ID_KEYS.has(key) && typeof value === 'number' && context?.source !== undefined) return BigInt(context.source);
        return value;
      }) as Record<string, unknown>;
    }
  } catch (err) {
    throw new InvalidMetadataError('table metadata is not valid JSON', { cause: err });
  }
  if (raw['format-version'] !== 2) {
    throw new InvalidMetadataError(`unsupported table format version ${String(raw['format-version'])} (only v2)`);
  }
  const m = raw as unknown as TableMetadata;
  const current = raw['current-snapshot-id'];
  m['current-snapshot-id'] = typeof current === 'bigint' && current >= 0n ? current : null;
  m.properties ??= {};
  m.snapshots ??= [];
  m['snapshot-log'] ??= [];
  m['metadata-log'] ??= [];
  m['sort-orders'] ??= [{ 'order-id': 0, fields: [] }];
  m['default-sort-order-id'] ??= 0;
  if (!m.refs) {
    m.refs = {};
    if (m['current-snapshot-id'] !== null) m.refs.main = { 'snapshot-id': m['current-snapshot-id'], type: 'branch' };
  }
  return m;
}

const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;
const bigintsRaw = (_key: string, value: unknown) => (typeof value === 'bigint' ? rawJSON(value.toString()) : value);

const utf8 = new TextEncoder();

/**
 * The arrays that grow by one element every commit (`snapshots`, `snapshot-log`): a table's
 * metadata file repeats every retained snapshot, and writing their JSON again was most of a
 * commit's serialization.
 */
const GROWING_ARRAYS = ['snapshots', 'snapshot-log'] as const;
const ITEM_SEPARATOR = ',\n    ';

/** A growing array's elements as the file holds them: UTF-8, joined by ITEM_SEPARATOR, no brackets. */
interface ArrayJson {
  elements: readonly object[];
  bytes: Uint8Array;
}

/** The most bytes of arrays' JSON kept (all tables). */
const MAX_KEPT_ARRAY_BYTES = 64 * 1024 * 1024;

/**
 * The last written JSON of each growing array, by table and array. Elements are never changed
 * once made, and a commit's metadata carries its base's elements over (withSnapshot), so the next
 * commit's array is the same elements and one more: only that one is written anew. An array
 * whose elements are not all the same objects (metadata read from its file, expired snapshots)
 * is written whole.
 */
const arrayJson = new Lru<string, ArrayJson>(MAX_KEPT_ARRAY_BYTES, (a) => a.bytes.byteLength);
/**
 * Last elements of arrays written whole and not kept. Keeping an array's JSON costs a copy of
 * it, wasted where the next commit reads the metadata from its file again (more tables than the
 * catalog keeps in memory): it is kept when an array ending with one of these is extended, so for
 * a table committed from memory twice in a row.
 */
const writtenOnce = new WeakSet<object>();

function sameElements(a: readonly object[], b: readonly object[], n: number): boolean {
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

function knownArrayJson(key: string, arr: readonly object[]): Uint8Array | undefined {
  const n = arr.length;
  const known = arrayJson.get(key);
  if (!known || known.elements.length < n - 1 || known.elements.length > n || !sameElements(known.elements, arr, known.elements.length)) return undefined;
  if (known.elements.length === n) return known.bytes;
  // An element of a top-level array is indented two levels; JSON text holds no raw line break
  // (strings escape theirs), so every one begins a line to indent.
  const added = JSON.stringify(arr[n - 1], bigintsRaw, 2).replaceAll('\n', '\n    ');
  const bytes = Buffer.concat([known.bytes, utf8.encode(ITEM_SEPARATOR + added)]);
  arrayJson.set(key, { elements: arr, bytes });
  return bytes;
}

/**
 * Metadata JSON as UTF-8 (JSON.stringify's layout, two-space indents); a table without snapshots
 * gets `current-snapshot-id: -1`.
 */
export function tableMetadataBytes(m: TableMetadata): Uint8Array {
  const out: Record<string, unknown> = { ...m, 'current-snapshot-id': m['current-snapshot-id'] ?? -1n };
  // Metadata built by hand may lack an array (parseTableMetadata fills them in), a damaged file hold other values.
  const growing = GROWING_ARRAYS.filter((k) => Array.isArray(m[k]) && m[k].length > 0 && m[k].every((e) => typeof e === 'object' && e !== null));
  const keyOf = (k: string) => `${m['table-uuid']}\u0000${k}`;
  const known = growing.map((k) => knownArrayJson(keyOf(k), m[k]));
  // A top-level key is the only one at its indent (nested keys are indented deeper), and the
  // array's closing bracket the first line at it after the key.
  const opening = (k: string) => `\n  ${JSON.stringify(k)}: [\n    `;
  const closing = '\n  ]';
  if (known.some((b) => b === undefined)) {
    const bytes = utf8.encode(JSON.stringify(out, bigintsRaw, 2));
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (const k of growing) {
      const arr = m[k];
      if (arr.length < 2 || !writtenOnce.has(arr.at(-2)!)) {
        writtenOnce.add(arr.at(-1)!);
        continue;
      }
      const from = buf.indexOf(opening(k)) + Buffer.byteLength(opening(k));
      arrayJson.set(keyOf(k), { elements: arr, bytes: bytes.slice(from, buf.indexOf(closing, from)) });
    }
    return bytes;
  }
  for (const k of growing) out[k] = [];
  const text = JSON.stringify(out, bigintsRaw, 2);
  const cuts = growing.map((k, i) => ({ at: text.indexOf(`\n  ${JSON.stringify(k)}: []`), k, bytes: known[i]! })).sort((a, b) => a.at - b.at);
  const parts: Uint8Array[] = [];
  let from = 0;
  for (const { at, k, bytes } of cuts) {
    parts.push(utf8.encode(text.slice(from, at) + opening(k)), bytes, utf8.encode(closing));
    from = at + `\n  ${JSON.stringify(k)}: []`.length;
  }
  parts.push(utf8.encode(text.slice(from)));
  return Buffer.concat(parts);
}

/** tableMetadataBytes as text. */
export function serializeTableMetadata(m: TableMetadata): string {
  return new TextDecoder().decode(tableMetadataBytes(m));
}

/** A random positive snapshot id below 2^53 (exact in any JSON reader, still a valid long). */
export function newSnapshotId(): bigint {
  const b = randomBytes(8);
  const id = b.readBigUInt64BE(0) & ((1n << 53n) - 1n);
  return id === 0n ? 1n : id;
}

/** Highest field id in a type, counting list element and map key/value ids. */
export function maxFieldId(type: IcebergType): number {
  if (typeof type === 'string') return 0;
  if (type.type === 'struct') return type.fields.reduce((acc, f) => Math.max(acc, f.id, maxFieldId(f.type)), 0);
  if (type.type === 'list') return Math.max(type['element-id'], maxFieldId(type.element));
  return Math.max(type['key-id'], type['value-id'], maxFieldId(type.key), maxFieldId(type.value));
}

export interface NewTableOptions {
  location: string;
  schema: Schema | Omit<Schema, 'schema-id'>;
  partitionSpec?: PartitionSpec | { 'spec-id'?: number; fields: Array<Omit<PartitionSpec['fields'][number], 'field-id'> & { 'field-id'?: number }> };
  sortOrder?: SortOrder;
  properties?: Record<string, string>;
  nowMs?: number;
}

/** Metadata of a new, empty v2 table. */
export function newTableMetadata(options: NewTableOptions): TableMetadata {
  const schema: Schema = { ...options.schema, type: 'struct', 'schema-id': 'schema-id' in options.schema ? options.schema['schema-id'] : 0 };
  const specIn = options.partitionSpec ?? { 'spec-id': 0, fields: [] };
  const spec: PartitionSpec = {
    'spec-id': specIn['spec-id'] ?? 0,
    fields: specIn.fields.map((f, i) => ({ ...f, 'field-id': f['field-id'] ?? 1000 + i })),
  };
  const ids = new Set<number>();
  for (const f of spec.fields) {
    if (f['field-id'] < 1000) throw new IcebergError('invalid_argument', `partition field ${f.name}: field-id must be >= 1000`);
    if (ids.has(f['field-id'])) throw new IcebergError('invalid_argument', `partition field id ${f['field-id']} is used twice`);
    ids.add(f['field-id']);
  }
  let sortOrder: SortOrder = options.sortOrder ?? { 'order-id': 0, fields: [] };
  if (sortOrder.fields.length === 0) sortOrder = { 'order-id': 0, fields: [] };
  else if (sortOrder['order-id'] === 0) sortOrder = { ...sortOrder, 'order-id': 1 };
  const now = options.nowMs ?? Date.now();
  return {
    'format-version': 2,
    'table-uuid': randomUUID(),
    location: options.location.replace(/\/+$/, ''),
    'last-sequence-number': 0,
    'last-updated-ms': now,
    'last-column-id': maxFieldId(schema),
    'current-schema-id': schema['schema-id'],
    schemas: [schema],
    'default-spec-id': spec['spec-id'],
    'partition-specs': [spec],
    'last-partition-id': Math.max(999, ...spec.fields.map((f) => f['field-id'])),
    'default-sort-order-id': sortOrder['order-id'],
    'sort-orders': [sortOrder],
    properties: { ...(options.properties ?? {}) },
    'current-snapshot-id': null,
    refs: {},
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
  };
}

export function currentSnapshot(m: TableMetadata): Snapshot | undefined {
  const id = m['current-snapshot-id'];
  return id === null ? undefined : m.snapshots.find((s) => s['snapshot-id'] === id);
}

export function snapshotById(m: TableMetadata, id: bigint): Snapshot | undefined {
  return m.snapshots.find((s) => s['snapshot-id'] === id);
}

export function currentSchema(m: TableMetadata): Schema {
  const s = m.schemas.find((x) => x['schema-id'] === m['current-schema-id']);
  if (!s) throw new InvalidMetadataError(`current schema ${m['current-schema-id']} not found`);
  return s;
}

export function schemaById(m: TableMetadata, id: number | undefined): Schema {
  return (id === undefined ? undefined : m.schemas.find((x) => x['schema-id'] === id)) ?? currentSchema(m);
}

export function specById(m: TableMetadata, id: number): PartitionSpec {
  const s = m['partition-specs'].find((x) => x['spec-id'] === id);
  if (!s) throw new InvalidMetadataError(`partition spec ${id} not found`);
  return s;
}

export function defaultSpec(m: TableMetadata): PartitionSpec {
  return specById(m, m['default-spec-id']);
}

/** The snapshot and its ancestors, newest first (stops where history was expired). */
export function ancestorsOf(m: TableMetadata, id: bigint | null): Snapshot[] {
  const out: Snapshot[] = [];
  const seen = new Set<bigint>();
  let cur = id === null ? undefined : snapshotById(m, id);
  while (cur && !seen.has(cur['snapshot-id'])) {
    out.push(cur);
    seen.add(cur['snapshot-id']);
    const parent = cur['parent-snapshot-id'];
    cur = parent === undefined || parent === null ? undefined : snapshotById(m, parent);
  }
  return out;
}

/** Version number of a `<NNNNN>-<uuid>.metadata.json` (or `v<N>.metadata.json`) file, else -1. */
export function metadataVersion(location: string): number {
  const name = location.slice(location.lastIndexOf('/') + 1);
  const m = /^(\d+)-.*\.metadata\.json$/.exec(name) ?? /^v(\d+)\.metadata\.json$/.exec(name);
  return m ? Number(m[1]) : -1;
}

/** File name of the metadata version after `previousLocation` (00000 for a new table). */
export function metadataFileName(version: number): string {
  return `${String(version).padStart(5, '0')}-${randomUUID()}.metadata.json`;
}

/** Appends the base file to the metadata log, bounded by write.metadata.previous-versions-max. */
export function withMetadataLog(next: TableMetadata, base: TableMetadata, baseLocation: string): TableMetadata {
  const max = Number(next.properties[PREVIOUS_VERSIONS_MAX] ?? DEFAULT_PREVIOUS_VERSIONS_MAX);
  const log = [...base['metadata-log'], { 'timestamp-ms': base['last-updated-ms'], 'metadata-file': baseLocation }];
  return { ...next, 'metadata-log': Number.isFinite(max) && max >= 0 ? log.slice(Math.max(0, log.length - max)) : log };
}
