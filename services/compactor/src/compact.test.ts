import { describe, expect, it } from 'vitest';
import { serializeLong, type PlannedFile, type TableMetadata } from '@floe/iceberg';
import { tableDef } from '@floe/schema';
import { MAX_CONCAT_ROW_GROUPS, planCompaction, type PlanCompactionOptions } from './compact.ts';

const def = tableDef('traces');
const NOW = 10_000_000;
const MIN_AGE = 60_000;
const TARGET = 100;

/** A planned file: `seq` is the sequence number of the snapshot that added it. */
function file(name: string, size: number, opts: { hour?: number; seq?: number; start?: number; spec?: number; sortOrderId?: number; rowGroups?: number } = {}): PlannedFile {
  return {
    key: name,
    uri: `file:///${name}`,
    fileSizeBytes: size,
    recordCount: 1,
    partition: { timestamp_hour: opts.hour ?? 1 },
    specId: opts.spec ?? 0,
    sequenceNumber: opts.seq ?? 1,
    lowerBounds: { 1: serializeLong(BigInt(opts.start ?? 0)) },
    upperBounds: { 1: serializeLong(BigInt(opts.start ?? 0)) },
    columnSizes: {},
    valueCounts: {},
    nullValueCounts: {},
    ...(opts.sortOrderId !== undefined ? { sortOrderId: opts.sortOrderId } : {}),
    // What compaction wrote records its row groups' offsets; a flush file records none.
    ...(opts.rowGroups !== undefined ? { splitOffsets: Array.from({ length: opts.rowGroups }, (_, i) => 4 + i * 10) } : {}),
  };
}

/** A sorted merge (compaction's, with id blocks) and a concatenation, as their manifest entries say. */
const sorted = (name: string, size: number, opts: Parameters<typeof file>[2] = {}) => file(name, size, { sortOrderId: 1, rowGroups: 1, ...opts });
const concatenation = (name: string, size: number, rowGroups: number, opts: Parameters<typeof file>[2] = {}) => file(name, size, { sortOrderId: 0, rowGroups, ...opts });

/** Table metadata with snapshots 1…n committed at the given times (ms). */
function metadata(commitTimes: number[]): TableMetadata {
  return {
    'default-spec-id': 0,
    snapshots: commitTimes.map((t, i) => ({ 'snapshot-id': BigInt(i + 1), 'sequence-number': i + 1, 'timestamp-ms': t, 'manifest-list': '', summary: { operation: 'append' } })),
  } as unknown as TableMetadata;
}

const old = NOW - 2 * MIN_AGE;
// NOW falls in hour 2 (7,200,000–10,800,000 ms), which is open; hours 0 and 1 are closed.
const OPEN = 2;
const CLOSED = 0;
const young = NOW - MIN_AGE / 2;

describe('planCompaction', () => {
  it.each([
    {
      name: 'packs in time order, next-fit, within the target',
      files: [file('c', 40, { start: 3 }), file('a', 40, { start: 1 }), file('b', 40, { start: 2 }), file('d', 10, { start: 4 })],
      times: [old],
      groups: [['a', 'b'], ['c', 'd']],
    },
    {
      name: 'leaves files at or above the target alone',
      files: [file('big', 100), file('a', 30, { start: 1 }), file('b', 30, { start: 2 })],
      times: [old],
      groups: [['a', 'b']],
    },
    {
      name: 'needs two small files in a partition',
      files: [file('a', 30, { hour: 1 }), file('b', 30, { hour: 2 }), file('big', 150, { hour: 2 })],
      times: [old],
      groups: [],
    },
    {
      name: 'groups each hour separately, oldest hour first',
      files: [file('b1', 10, { hour: 2 }), file('a1', 10, { hour: 1 }), file('b2', 10, { hour: 2 }), file('a2', 10, { hour: 1 })],
      times: [old],
      groups: [['a1', 'a2'], ['b1', 'b2']],
    },
    {
      name: 'skips files committed less than the minimum age ago',
      files: [file('a', 10, { seq: 1 }), file('b', 10, { seq: 1 }), file('c', 10, { seq: 2 })],
      times: [old, young],
      groups: [['a', 'b']],
    },
    {
      name: 'bounds the age of a file whose snapshot expired by the next retained snapshot',
      files: [file('a', 10, { seq: 1 }), file('b', 10, { seq: 2 })],
      // snapshots 1 and 2 expired; 3 (young) is the first retained one after them
      times: [old, old, young],
      retained: [3],
      groups: [],
    },
    {
      name: 'drops a trailing group of one',
      files: [file('a', 60, { start: 1 }), file('b', 30, { start: 2 }), file('c', 90, { start: 3 })],
      times: [old],
      groups: [['a', 'b']],
    },
    {
      name: 'open hour: a big merged file is left alone while the new files are small beside it',
      files: [file('merged', 60, { hour: OPEN, start: 1 }), file('f1', 10, { hour: OPEN, start: 2 }), file('f2', 10, { hour: OPEN, start: 3 }), file('f3', 10, { hour: OPEN, start: 4 })],
      times: [old],
      groups: [['f1', 'f2', 'f3']],
    },
    {
      name: 'open hour: merged again once the new files add up to its size',
      files: [file('merged', 30, { hour: OPEN, start: 1 }), file('f1', 10, { hour: OPEN, start: 2 }), file('f2', 10, { hour: OPEN, start: 3 }), file('f3', 10, { hour: OPEN, start: 4 })],
      times: [old],
      groups: [['merged', 'f1', 'f2', 'f3']],
    },
    {
      name: 'open hour: an outsized file in the middle splits the group into the stretches before and after it',
      files: [
        file('a', 5, { hour: OPEN, start: 1 }),
        file('b', 5, { hour: OPEN, start: 2 }),
        file('big', 50, { hour: OPEN, start: 3 }),
        file('c', 5, { hour: OPEN, start: 4 }),
        file('d', 5, { hour: OPEN, start: 5 }),
        file('e', 5, { hour: OPEN, start: 6 }),
      ],
      times: [old],
      groups: [['a', 'b'], ['c', 'd', 'e']],
    },
    {
      name: 'closed hour: everything below the target is merged, whatever the sizes',
      files: [file('merged', 60, { hour: CLOSED, start: 1 }), file('f1', 10, { hour: CLOSED, start: 2 }), file('f2', 10, { hour: CLOSED, start: 3 })],
      times: [old],
      groups: [['merged', 'f1', 'f2']],
    },
    {
      name: 'open hour: groups are concatenated, closed hours sorted',
      files: [file('o1', 10, { hour: OPEN, start: 1 }), file('o2', 10, { hour: OPEN, start: 2 }), file('c1', 10, { hour: CLOSED, start: 1 }), file('c2', 10, { hour: CLOSED, start: 2 })],
      times: [old],
      groups: [['c1', 'c2'], ['o1', 'o2']],
      methods: ['sort', 'concat'],
    },
    {
      name: 'closed hour: a concatenation is sorted even alone and even at the target size',
      files: [file('cat', 100, { hour: CLOSED, start: 1, sortOrderId: 0 }), file('sorted', 100, { hour: CLOSED, start: 2, sortOrderId: 1 }), file('cat2', 40, { hour: 1, start: 1, sortOrderId: 0 })],
      times: [old],
      groups: [['cat'], ['cat2']],
      methods: ['sort', 'sort'],
    },
    {
      name: 'open hour: a concatenation at the target size is left alone, a smaller one tiered like any file',
      files: [file('cat', 100, { hour: OPEN, start: 1, sortOrderId: 0 }), file('cat2', 20, { hour: OPEN, start: 2, sortOrderId: 0 }), file('f1', 10, { hour: OPEN, start: 3 }), file('f2', 10, { hour: OPEN, start: 4 })],
      times: [old],
      groups: [['cat2', 'f1', 'f2']],
      methods: ['concat'],
    },
    {
      name: 'open hour: files are concatenated at their own, shorter age (compactor.open_hour_interval)',
      files: [file('a', 10, { hour: OPEN, start: 1, seq: 1 }), file('b', 10, { hour: OPEN, start: 2, seq: 2 }), file('c', 10, { hour: CLOSED, start: 1, seq: 2 }), file('d', 10, { hour: CLOSED, start: 2, seq: 2 })],
      // Snapshot 2 is younger than min_file_age but older than the open-hour age.
      times: [old, NOW - 20_000],
      opts: { openMinFileAgeMs: 15_000 },
      groups: [['a', 'b']],
      methods: ['concat'],
    },
    {
      name: 'open hours only (the frequent pass) leaves closed hours to the full pass',
      files: [file('o1', 10, { hour: OPEN, start: 1 }), file('o2', 10, { hour: OPEN, start: 2 }), file('c1', 10, { hour: CLOSED, start: 1 }), file('c2', 10, { hour: CLOSED, start: 2 })],
      times: [old],
      opts: { openHoursOnly: true },
      groups: [['o1', 'o2']],
      methods: ['concat'],
    },
    {
      name: 'open hour: sorted merges are sorted together, flush files concatenated apart from them',
      files: [sorted('s1', 30, { hour: OPEN, start: 1 }), file('f1', 5, { hour: OPEN, start: 2 }), sorted('s2', 30, { hour: OPEN, start: 3 }), file('f2', 5, { hour: OPEN, start: 4 })],
      times: [old],
      groups: [['s1', 's2'], ['f1', 'f2']],
      methods: ['sort', 'concat'],
    },
    {
      name: 'open hours only: the sorted merges are left to the full pass',
      files: [sorted('s1', 30, { hour: OPEN, start: 1 }), file('f1', 5, { hour: OPEN, start: 2 }), sorted('s2', 30, { hour: OPEN, start: 3 }), file('f2', 5, { hour: OPEN, start: 4 })],
      times: [old],
      opts: { openHoursOnly: true },
      groups: [['f1', 'f2']],
      methods: ['concat'],
    },
    {
      name: 'open hour: a concatenation gathers at most MAX_CONCAT_ROW_GROUPS row groups',
      files: Array.from({ length: MAX_CONCAT_ROW_GROUPS + 3 }, (_, i) => file(`f${String(i).padStart(2, '0')}`, 1, { hour: OPEN, start: i })),
      times: [old],
      groups: [Array.from({ length: MAX_CONCAT_ROW_GROUPS }, (_, i) => `f${String(i).padStart(2, '0')}`), ['f32', 'f33', 'f34']],
      methods: ['concat', 'concat'],
    },
    {
      name: 'open hour: a concatenation past half the row groups is sorted with the sorted merges; a smaller one takes more flushes',
      files: [
        concatenation('full', 40, MAX_CONCAT_ROW_GROUPS, { hour: OPEN, start: 1 }),
        sorted('s1', 40, { hour: OPEN, start: 2 }),
        concatenation('half', 8, MAX_CONCAT_ROW_GROUPS / 2, { hour: OPEN, start: 3 }),
        file('f1', 4, { hour: OPEN, start: 4 }),
        file('f2', 4, { hour: OPEN, start: 5 }),
      ],
      times: [old],
      groups: [['full', 's1'], ['half', 'f1', 'f2']],
      methods: ['sort', 'concat'],
    },
    {
      // Concatenations whose row groups add up to more than one may hold could never merge with
      // each other; those past half of it go to the sorted tier, so none is left without a partner.
      name: 'open hour: no concatenation is stranded between the tiers',
      // The small ones merge, size-tiered, once the flushes beside them add up to the largest.
      files: [
        ...[29, 3, 27, 5, 20, 13].map((groups, i) => concatenation(`c${groups}`, groups, groups, { hour: OPEN, start: i })),
        ...[0, 1, 2, 3, 4].map((i) => file(`f${i}`, 1, { hour: OPEN, start: 10 + i })),
      ],
      times: [old],
      groups: [['c29', 'c27', 'c20'], ['c3', 'c5', 'c13', 'f0', 'f1', 'f2', 'f3', 'f4']],
      methods: ['sort', 'concat'],
    },
    {
      name: 'a full pass beside open-hour passes of their own leaves them the concatenations',
      files: [sorted('s1', 30, { hour: OPEN, start: 1 }), file('f1', 5, { hour: OPEN, start: 2 }), sorted('s2', 30, { hour: OPEN, start: 3 }), file('f2', 5, { hour: OPEN, start: 4 })],
      times: [old],
      opts: { skipOpenConcat: true },
      groups: [['s1', 's2']],
      methods: ['sort'],
    },
    {
      name: 'open hour: a file a concatenation could not take is sorted instead',
      files: [file('lone', 10, { hour: OPEN, start: 1 }), sorted('s1', 10, { hour: OPEN, start: 2 }), file('f1', 5, { hour: OPEN, start: 3 }), file('f2', 5, { hour: OPEN, start: 4 })],
      times: [old],
      opts: { sortOnly: new Set(['lone']) },
      groups: [['lone', 's1'], ['f1', 'f2']],
      methods: ['sort', 'concat'],
    },
    {
      name: 'ignores files of another partition spec',
      files: [file('a', 10, { spec: 1 }), file('b', 10, { spec: 1 })],
      times: [old],
      groups: [],
    },
  ])('$name', ({ files, times, groups, retained, methods, opts }: { files: PlannedFile[]; times: number[]; groups: string[][]; retained?: number[]; methods?: string[]; opts?: Partial<PlanCompactionOptions> }) => {
    const m = metadata(times);
    if (retained) m.snapshots = m.snapshots.filter((s) => retained.includes(s['sequence-number']));
    const planned = planCompaction(def, m, files, { targetFileBytes: TARGET, minFileAgeMs: MIN_AGE, nowMs: NOW, ...opts });
    expect(planned.map((g) => g.files.map((f) => f.key))).toEqual(groups);
    if (methods) expect(planned.map((g) => g.method)).toEqual(methods);
    for (const g of planned) if (g.files.length > 1) expect(g.files.reduce((a, f) => a + f.fileSizeBytes, 0)).toBeLessThanOrEqual(TARGET);
  });
});
