// Naming and housekeeping of WAL segments.
//
// A segment key is <prefix><15-digit ms timestamp>-<instanceId>-<10-digit sequence>.wal. Every
// appender writes the current time first, so plain key order is creation order across processes
// (to clock accuracy); within one appender the timestamp never goes backwards and the sequence
// breaks ties. instanceId must be unique among live appenders sharing a prefix.

import { ObjectNotFoundError } from './errors.ts';
import type { ObjectInfo, ObjectStore } from './object-store.ts';
import { decodeSegment, segmentPrefixLength } from './wal-format.ts';
import type { WalRecord } from './wal-format.ts';

export const DEFAULT_WAL_PREFIX = 'wal/';

/**
 * Allowance for clocks: WAL segment names carry the acceptor's clock, snapshot timestamps the
 * writer's. Without a margin a skewed pair of machines could make a snapshot look older than the
 * segment it consumed.
 */
export const WAL_CLOCK_SKEW_MS = 5 * 60_000;
const TIMESTAMP_DIGITS = 15;
const SEQ_DIGITS = 10;
const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/;
const SEGMENT_NAME = /^(\d{15})-([A-Za-z0-9][A-Za-z0-9_.-]{0,199})-(\d{10})\.wal$/;

export interface SegmentName {
  timestampMs: number;
  instanceId: string;
  seq: number;
}

export function validateInstanceId(instanceId: string): string {
  if (typeof instanceId !== 'string' || !INSTANCE_ID.test(instanceId)) {
    throw new TypeError(
      `WAL instanceId ${JSON.stringify(instanceId)} must be 1-200 characters of [A-Za-z0-9_.-], starting alphanumeric`,
    );
  }
  return instanceId;
}

export function formatSegmentKey(prefix: string, name: SegmentName): string {
  const ts = String(name.timestampMs).padStart(TIMESTAMP_DIGITS, '0');
  const seq = String(name.seq).padStart(SEQ_DIGITS, '0');
  return `${prefix}${ts}-${name.instanceId}-${seq}.wal`;
}

/** The parts of a segment key directly under `prefix`, or undefined when it is not one. */
export function parseSegmentKey(key: string, prefix: string = DEFAULT_WAL_PREFIX): SegmentName | undefined {
  if (!key.startsWith(prefix)) return undefined;
  const m = SEGMENT_NAME.exec(key.slice(prefix.length));
  if (!m) return undefined;
  return { timestampMs: Number(m[1]), instanceId: m[2]!, seq: Number(m[3]) };
}

/** Segments under `prefix`, oldest first. Other objects under the prefix are ignored. */
export async function listSegments(store: ObjectStore, prefix: string = DEFAULT_WAL_PREFIX): Promise<ObjectInfo[]> {
  const objects = await store.list(prefix);
  return objects.filter((o) => parseSegmentKey(o.key, prefix) !== undefined);
}

/** What a listing of the WAL says of the writer's backlog. */
export interface WalBacklog {
  segments: number;
  bytes: number;
  /** The time in the name of the oldest segment (undefined: none). */
  oldestMs: number | undefined;
}

/** The backlog of a listing (listSegments). */
export function walBacklog(segments: readonly ObjectInfo[], prefix: string = DEFAULT_WAL_PREFIX): WalBacklog {
  let bytes = 0;
  let oldestMs: number | undefined;
  for (const s of segments) {
    bytes += s.size;
    const t = parseSegmentKey(s.key, prefix)?.timestampMs;
    if (t !== undefined && (oldestMs === undefined || t < oldestMs)) oldestMs = t;
  }
  return { segments: segments.length, bytes, oldestMs };
}

/** A segment's bytes, in memory from `alloc` where the store can read into it; ObjectNotFoundError when gone. */
export async function segmentBytes(store: ObjectStore, key: string, alloc?: (bytes: number) => Uint8Array): Promise<Uint8Array> {
  const bytes = await store.get(key, alloc);
  if (bytes === undefined) throw new ObjectNotFoundError(key);
  return bytes;
}

/**
 * All records of a segment, verified (see wal-format.ts); throws WalCorruptionError when damaged.
 * The payloads are views of the segment's bytes (segmentBytes).
 */
export async function readSegment(store: ObjectStore, key: string, alloc?: (bytes: number) => Uint8Array): Promise<WalRecord[]> {
  return decodeSegment(await segmentBytes(store, key, alloc), key);
}

export async function deleteSegments(store: ObjectStore, keys: string[]): Promise<void> {
  await store.deleteMany(keys);
}

/**
 * Publishes the appended segments (WalAppender, segmentMaxAgeMs) that their acceptor left open for
 * `idleMs`: it died, or stalled so long that its next append fails rather than be acknowledged.
 * Each keeps its longest prefix of whole, verified records: an append torn by the crash was not
 * acknowledged. A live acceptor seals its segments within segmentMaxAgeMs, so `idleMs` only
 * needs to be well above that. With `mine`, only the segments it accepts (a writer's share of
 * a WAL that several writers read). Returns the keys published (none on a store without appends).
 */
export async function recoverOpenSegments(store: ObjectStore, idleMs: number, mine?: (key: string) => boolean): Promise<string[]> {
  if (!store.appendables) return [];
  return store.appendables.recover(
    idleMs,
    (bytes) => {
      const valid = segmentPrefixLength(bytes);
      return valid.records > 0 ? valid.bytes : 0;
    },
    mine,
  );
}
