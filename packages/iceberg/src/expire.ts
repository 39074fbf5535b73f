// Snapshot expiry: which snapshots to keep, and which files only the expired ones referenced.

import { ancestorsOf } from './metadata.ts';
import type { ManifestReader } from './scan.ts';
import type { Snapshot, TableMetadata } from './types.ts';

export interface ExpireOptions {
  /** Expire snapshots older than this (ms since epoch)… */
  olderThanMs: number;
  /** …but always keep at least this many of the newest snapshots of each branch (min 1). */
  retainLast: number;
}

/**
 * Ids of the snapshots to keep. Per branch (Java's rule): walk back from the head and keep
 * ancestors while fewer than `retainLast` are kept or the snapshot is not older than
 * `olderThanMs`. Tags keep their snapshot. Snapshots no ref reaches are kept only if recent.
 */
export function snapshotsToRetain(m: TableMetadata, options: ExpireOptions): Set<bigint> {
  const keep = new Set<bigint>();
  const reachable = new Set<bigint>();
  const refs = Object.values(m.refs);
  if (m['current-snapshot-id'] !== null && !refs.some((r) => r['snapshot-id'] === m['current-snapshot-id'])) {
    refs.push({ 'snapshot-id': m['current-snapshot-id'], type: 'branch' });
  }
  for (const ref of refs) {
    if (ref.type === 'tag') {
      keep.add(ref['snapshot-id']);
      continue;
    }
    const minKeep = Math.max(1, ref['min-snapshots-to-keep'] ?? options.retainLast);
    const olderThan = ref['max-snapshot-age-ms'] !== undefined ? Math.min(options.olderThanMs, Date.now() - ref['max-snapshot-age-ms']) : options.olderThanMs;
    let kept = 0;
    let stopped = false;
    for (const s of ancestorsOf(m, ref['snapshot-id'])) {
      reachable.add(s['snapshot-id']);
      if (stopped) continue;
      if (kept < minKeep || s['timestamp-ms'] >= olderThan) {
        keep.add(s['snapshot-id']);
        kept++;
      } else {
        stopped = true;
      }
    }
  }
  for (const s of m.snapshots) {
    if (!reachable.has(s['snapshot-id']) && s['timestamp-ms'] >= options.olderThanMs) keep.add(s['snapshot-id']);
  }
  return keep;
}

/** Metadata without the expired snapshots (snapshot-log trimmed to a consistent suffix). */
export function withoutSnapshots(m: TableMetadata, keep: Set<bigint>, nowMs: number): TableMetadata {
  const log = m['snapshot-log'];
  let start = 0;
  for (let i = 0; i < log.length; i++) if (!keep.has(log[i]!['snapshot-id'])) start = i + 1;
  return {
    ...m,
    'last-updated-ms': nowMs,
    snapshots: m.snapshots.filter((s) => keep.has(s['snapshot-id'])),
    'snapshot-log': log.slice(start),
    refs: Object.fromEntries(Object.entries(m.refs).filter(([, r]) => keep.has(r['snapshot-id']))),
  };
}

export interface UnreferencedFiles {
  manifestLists: string[];
  manifests: string[];
  dataFiles: string[];
}

/**
 * Files (URIs) that `expired` snapshots referenced and no `retained` snapshot does: their manifest
 * lists, manifests no retained list carries, and data files live in those manifests that no
 * retained manifest lists as live (ADDED or EXISTING).
 */
export async function unreferencedFiles(reader: ManifestReader, metadata: TableMetadata, expired: Snapshot[], retained: Snapshot[]): Promise<UnreferencedFiles> {
  const retainedLists = new Set(retained.map((s) => s['manifest-list']));
  const manifestLists = [...new Set(expired.map((s) => s['manifest-list']))].filter((l) => !retainedLists.has(l));

  const retainedManifests = new Map<string, Awaited<ReturnType<ManifestReader['manifestList']>>[number]>();
  for (const s of retained) for (const mf of await reader.manifestList(s['manifest-list'])) retainedManifests.set(mf.manifestPath, mf);
  const expiredManifests = new Map<string, Awaited<ReturnType<ManifestReader['manifestList']>>[number]>();
  for (const s of expired) {
    for (const mf of await reader.manifestList(s['manifest-list'])) {
      if (!retainedManifests.has(mf.manifestPath)) expiredManifests.set(mf.manifestPath, mf);
    }
  }

  const candidates = new Set<string>();
  // Only live entries count: a DELETED entry means an earlier manifest held the file live, and that
  // manifest's expiry reports it, so every file is reported once.
  for (const mf of expiredManifests.values()) {
    for (const e of await reader.manifest(mf, metadata)) if (e.status !== 2) candidates.add(e.dataFile.filePath);
  }
  if (candidates.size > 0) {
    for (const mf of retainedManifests.values()) {
      for (const e of await reader.manifest(mf, metadata)) if (e.status !== 2) candidates.delete(e.dataFile.filePath);
    }
  }
  return { manifestLists, manifests: [...expiredManifests.keys()], dataFiles: [...candidates] };
}
