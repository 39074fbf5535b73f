// WAL segments a writer keeps only for tables it cannot commit (their commits fail: damaged
// metadata, files the store refuses), and whose tables those are. Each writer publishes its own
// small object under the held prefix beside the WAL (`wal-held/<writer>.json`); every acceptor
// of a cluster reads them all (they share only the store, the database and Redis), so that such
// segments limit the tenants owning those tables instead of every tenant's ingest.

import type { ObjectStore } from './object-store.ts';
import { DEFAULT_WAL_PREFIX } from './wal-segments.ts';

export interface HeldTable {
  tenant: string;
  dataset: string;
  table: string;
}

/** What one writer published: the segments it holds, each with the tables it is held for. */
export interface WalHeld {
  writer: string;
  /** When the writer wrote it (its clock, ms). */
  at: number;
  segments: Map<string, HeldTable[]>;
}

const FORMAT = 1;
/** How often a writer holding segments rewrites its object, though nothing changed (it is alive). */
export const WAL_HELD_REFRESH_MS = 30_000;
/**
 * An object not rewritten for this long is a stopped writer's, and not believed. Its segments are
 * then counted as any other backlog until their new owner reads them (within a round).
 */
export const WAL_HELD_MAX_AGE_MS = 5 * 60_000;

/** The prefix of the writers' held objects: beside the WAL's, not under it (never listed as segments). */
export function walHeldPrefix(walPrefix: string = DEFAULT_WAL_PREFIX): string {
  return `${walPrefix.replace(/\/+$/, '')}-held/`;
}

export function walHeldKey(writer: string, walPrefix: string = DEFAULT_WAL_PREFIX): string {
  return `${walHeldPrefix(walPrefix)}${writer}.json`;
}

/** Tables are written once and referenced by index: a broken table usually holds many segments. */
export function encodeWalHeld(writer: string, at: number, segments: ReadonlyMap<string, readonly HeldTable[]>): Uint8Array {
  const tables: Array<[string, string, string]> = [];
  const index = new Map<string, number>();
  const out: Record<string, number[]> = {};
  for (const [key, held] of segments) {
    out[key] = held.map((t) => {
      const id = `${t.tenant}\u0000${t.dataset}\u0000${t.table}`;
      let i = index.get(id);
      if (i === undefined) {
        index.set(id, (i = tables.length));
        tables.push([t.tenant, t.dataset, t.table]);
      }
      return i;
    });
  }
  return new TextEncoder().encode(JSON.stringify({ v: FORMAT, writer, at, tables, segments: out }));
}

/** Undefined for anything not written by encodeWalHeld (a reader skips it rather than fail). */
export function decodeWalHeld(bytes: Uint8Array): WalHeld | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
  if (!doc || typeof doc !== 'object') return undefined;
  const { v, writer, at, tables, segments } = doc as Record<string, unknown>;
  if (v !== FORMAT || typeof writer !== 'string' || typeof at !== 'number' || !Array.isArray(tables) || !segments || typeof segments !== 'object') return undefined;
  const named: HeldTable[] = [];
  for (const t of tables) {
    if (!Array.isArray(t) || t.length !== 3 || !t.every((s) => typeof s === 'string')) return undefined;
    const [tenant, dataset, table] = t as [string, string, string];
    named.push({ tenant, dataset, table });
  }
  const out = new Map<string, HeldTable[]>();
  for (const [key, ids] of Object.entries(segments as Record<string, unknown>)) {
    if (!Array.isArray(ids)) return undefined;
    const held = ids.map((i) => (typeof i === 'number' ? named[i] : undefined));
    if (held.some((t) => t === undefined)) return undefined;
    out.set(key, held as HeldTable[]);
  }
  return { writer, at, segments: out };
}

/**
 * Reads what the live writers hold, re-reading only the objects that changed since the last
 * call (a listing every second must not fetch every writer's object every second). An object
 * written more than `maxAgeMs` ago is a writer's that stopped: it is not believed (a live writer
 * rewrites its object well within that).
 */
export class WalHeldReader {
  readonly #store: ObjectStore;
  readonly #prefix: string;
  readonly #maxAgeMs: number;
  readonly #cache = new Map<string, { stamp: string; held: WalHeld | undefined }>();

  constructor(store: ObjectStore, maxAgeMs: number = WAL_HELD_MAX_AGE_MS, walPrefix: string = DEFAULT_WAL_PREFIX) {
    this.#store = store;
    this.#prefix = walHeldPrefix(walPrefix);
    this.#maxAgeMs = maxAgeMs;
  }

  /** Every segment some live writer holds, with the tables it is held for (by any writer). */
  async read(now = Date.now()): Promise<Map<string, HeldTable[]>> {
    const objects = (await this.#store.list(this.#prefix)).filter((o) => o.key.endsWith('.json'));
    const listed = new Set(objects.map((o) => o.key));
    for (const k of this.#cache.keys()) if (!listed.has(k)) this.#cache.delete(k);
    const out = new Map<string, HeldTable[]>();
    for (const o of objects) {
      const stamp = `${o.size}:${o.lastModified?.getTime() ?? ''}`;
      let hit = this.#cache.get(o.key);
      if (!hit || hit.stamp !== stamp || o.lastModified === undefined) {
        const bytes = await this.#store.get(o.key);
        // Deleted since the listing: its writer holds nothing any more.
        if (bytes === undefined) continue;
        this.#cache.set(o.key, (hit = { stamp, held: decodeWalHeld(bytes) }));
      }
      if (!hit.held || now - hit.held.at > this.#maxAgeMs) continue;
      for (const [key, tables] of hit.held.segments) out.set(key, [...(out.get(key) ?? []), ...tables]);
    }
    return out;
  }
}
