import { readFileSync } from 'node:fs';

/**
 * Where a process's resident memory lies, by kind of mapping, from /proc/<pid>/smaps: what RSS
 * alone cannot say when it grows (page cache of mapped files, the brk heap, anonymous memory of
 * V8, DuckDB's bundled jemalloc and thread stacks, and glibc's per-thread malloc arenas).
 * All figures are resident bytes (smaps `Rss`), in MB.
 */
export interface ResidentByMapping {
  /** Mappings of files (shared libraries, the node binary, mapped Parquet or WAL files). */
  fileMb: number;
  /** `[heap]`: memory got with brk, glibc's main malloc arena. */
  brkMb: number;
  /** Anonymous mappings (V8's heap and code, DuckDB's jemalloc, stacks, glibc arenas, mmapped large blocks). */
  anonMb: number;
  /** The part of anonMb that looks like glibc's non-main malloc arenas (an estimate: see isArenaHeap). */
  arenaMb: number;
  /** How many mappings looked like arena heaps. */
  arenas: number;
  /** Everything else (`[stack]`, `[vdso]`, `[vvar]`, …). */
  otherMb: number;
}

interface Mapping {
  start: number;
  end: number;
  perms: string;
  path: string;
  rssKb: number;
}

const MIB = 1024 * 1024;
/**
 * glibc's HEAP_MAX_SIZE on 64-bit (2 × DEFAULT_MMAP_THRESHOLD_MAX): each non-main arena's heap is
 * one reservation of this size, aligned to it (malloc/arena.c new_heap).
 */
const ARENA_HEAP = 64 * MIB;

const isAnonymous = (m: Mapping) => m.path === '' || m.path.startsWith('[anon');

/**
 * Heuristic for a glibc arena heap, an estimate: new_heap() reserves 64 MiB at a 64 MiB-aligned
 * address with PROT_NONE and makes the part in use read-write, growing it from the start. In smaps
 * that shows as an anonymous rw-p mapping starting on a 64 MiB boundary, at most 64 MiB long, that
 * either fills the reservation or is followed at once by the reservation's PROT_NONE (---p) rest up
 * to the next boundary. Nothing else in this process is known to reserve that way (DuckDB's
 * jemalloc maps extents of its own sizes, V8 its pages inside its own reservations), but a mapping
 * that happens to match is counted too, and two full neighbouring heaps the kernel merged into one
 * rw-p mapping (> 64 MiB) are not: this is neither a lower nor an upper bound in every case.
 */
function isArenaHeap(m: Mapping, next: Mapping | undefined): boolean {
  if (!isAnonymous(m) || !m.perms.startsWith('rw') || m.start % ARENA_HEAP !== 0) return false;
  const size = m.end - m.start;
  if (size > ARENA_HEAP) return false;
  if (size === ARENA_HEAP) return true;
  return next !== undefined && isAnonymous(next) && next.start === m.end && next.perms.startsWith('---') && next.end === m.start + ARENA_HEAP;
}

function readMappings(pid: number): Mapping[] {
  const out: Mapping[] = [];
  let cur: Mapping | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      cur = { start: parseInt(head[1]!, 16), end: parseInt(head[2]!, 16), perms: head[3]!, path: head[4]!.trim(), rssKb: 0 };
      out.push(cur);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && cur) cur.rssKb = Number(rss[1]);
  }
  return out;
}

export function residentByMapping(pid: number): ResidentByMapping {
  const maps = readMappings(pid);
  const r: ResidentByMapping = { fileMb: 0, brkMb: 0, anonMb: 0, arenaMb: 0, arenas: 0, otherMb: 0 };
  maps.forEach((m, i) => {
    const mb = m.rssKb / 1024;
    if (m.path === '[heap]') r.brkMb += mb;
    else if (isAnonymous(m)) {
      r.anonMb += mb;
      if (isArenaHeap(m, maps[i + 1])) {
        r.arenaMb += mb;
        r.arenas++;
      }
    } else if (m.path.startsWith('/')) r.fileMb += mb;
    else r.otherMb += mb;
  });
  return r;
}

/** What Floe's own gauges attribute (GET /metrics), in MB. */
export interface FloeMemoryGauges {
  /** duckdb_memory_bytes by component (writer, querier, compactor). */
  duckdbMb: Record<string, number>;
  /** duckdb_temporary_storage_bytes, all components together. */
  duckdbTempMb: number;
  /** v8js_memory_heap_used_bytes over every heap space. */
  v8UsedMb: number;
  /** v8js_memory_heap_limit_bytes over every space: what the spaces hold (used or free), the part of RSS V8's heap accounts for. */
  v8HeldMb: number;
  /**
   * series_lists_bytes: the querier's kept PromQL point lists (Float64Arrays, up to
   * querier.series_cache_mb). Outside V8's heap and DuckDB, so part of "unattributed"; their
   * backing stores come from glibc malloc on the main thread (the brk heap).
   */
  seriesListsMb: number;
  /**
   * nodejs_memory_external_bytes: Buffers and typed arrays JavaScript holds (the point lists
   * among them), and other native memory V8 objects account for. Both come from malloc, so they
   * are part of "unattributed"; what is left after them is malloc's own keeping and native code
   * no gauge counts.
   */
  arrayBuffersMb: number;
  otherExternalMb: number;
}

/** Sums of each series of `name` by the value of `label` ('' when the series has none) in a Prometheus text exposition. */
function sumBy(text: string, name: string, label?: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    const m = /^\S+?(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const key = label ? (new RegExp(`(?:^|,)${label}="([^"]*)"`).exec(m[1] ?? '')?.[1] ?? '') : '';
    out[key] = (out[key] ?? 0) + Number(m[2]);
  }
  return out;
}

const total = (xs: Record<string, number>) => Object.values(xs).reduce((a, b) => a + b, 0);

/** Reads the gauges from a `GET /metrics` of the process (any of its services' ports serves the same meter). */
export async function floeMemoryGauges(metricsUrl: string): Promise<FloeMemoryGauges> {
  const res = await fetch(metricsUrl);
  if (res.status !== 200) throw new Error(`${metricsUrl} answered ${res.status}`);
  const text = await res.text();
  const duckdb = sumBy(text, 'duckdb_memory_bytes', 'component');
  return {
    duckdbMb: Object.fromEntries(Object.entries(duckdb).map(([k, v]) => [k, v / MIB])),
    duckdbTempMb: total(sumBy(text, 'duckdb_temporary_storage_bytes')) / MIB,
    v8UsedMb: total(sumBy(text, 'v8js_memory_heap_used_bytes')) / MIB,
    v8HeldMb: total(sumBy(text, 'v8js_memory_heap_limit_bytes')) / MIB,
    seriesListsMb: total(sumBy(text, 'series_lists_bytes')) / MIB,
    ...(() => {
      const external = sumBy(text, 'nodejs_memory_external_bytes', 'nodejs_memory_type');
      return { arrayBuffersMb: (external.array_buffers ?? 0) / MIB, otherExternalMb: (external.other ?? 0) / MIB };
    })(),
  };
}
