import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, listAttributeTypeMismatches } from '@floe/meta';
import { formatSegmentKey, listSegments } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import type { SqlCatalog } from '@floe/iceberg';
import { AttributeTypePins } from './attribute-types.ts';
import { Committer, type CommitterOptions } from './committer.ts';
import { openWriterFixture, recordingTelemetry, sealSegment, type WriterFixture } from './test-support.ts';
import { writerMetrics } from './writer-metrics.ts';

/**
 * The committer's self-monitoring instruments (spec 2, Events), on a real OpenTelemetry SDK
 * meter, each in the situation that produces it: commits (commit_duration), segments left for a
 * later round by the budget (entries_deferred_by_budget), a table group another writer committed
 * first (groups_deferred), data set aside or dropped (commit_failures kind permanent) and attribute values
 * off their key's pin (attribute_type_mismatches). The transient kind is recorded by the
 * writer's loop: start.test.ts.
 */
const HOUR_NS = 3_600_000_000_000n;
const H = 490_777;
const t = (offset: number) => (BigInt(H) * HOUR_NS + BigInt(offset)).toString();
const logRow = (offset: number, attrs: Record<string, Record<string, unknown>> = {}) => ({ time_unix_nano: t(offset), service_name: 'metrics-test', body: `r${offset}`, ...attrs });

describe('writer instruments recorded by the committer', () => {
  let f: WriterFixture;

  beforeAll(async () => {
    f = await openWriterFixture('writer-metrics');
    await createTenant(f.db, { id: 'acme' });
  });
  afterAll(async () => {
    await f?.close();
  });

  const committerWith = (opts: Partial<CommitterOptions>) => new Committer({ store: f.store, catalog: f.catalog, writer: f.writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, ...opts });
  /** Rows the table's current snapshot holds (what a query would read). */
  const storedRows = async (tenant: string, table: string) => {
    const handle = await f.catalog.loadTable(`${tenant}.default`, table);
    return handle ? (await f.catalog.planFiles(handle)).reduce((n, file) => n + file.recordCount, 0) : 0;
  };

  it('commit_duration: one histogram value per committed table group, with attribute table', async () => {
    const m = recordingTelemetry();
    const c = committerWith({ metrics: writerMetrics(m.telemetry) });
    await sealSegment(f.store, { tenant: 'dur', table: 'logs', hour: H }, [logRow(1), logRow(2)]);
    await sealSegment(f.store, { tenant: 'dur', table: 'traces', hour: H }, [{ trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16), name: 'op', service_name: 'svc', start_time_unix_nano: t(3) }]);
    expect(await c.round()).toMatchObject({ commits: 2, rows: 3 });
    await sealSegment(f.store, { tenant: 'dur', table: 'logs', hour: H }, [logRow(4)]);
    expect(await c.round()).toMatchObject({ commits: 1, rows: 1 });
    const points = (await m.points('commit_duration')).map((p) => ({ attributes: p.attributes, count: (p.value as { count: number }).count }));
    expect(points).toEqual(expect.arrayContaining([{ attributes: { table: 'logs' }, count: 2 }, { attributes: { table: 'traces' }, count: 1 }]));
    expect(points).toHaveLength(2);
    expect(await storedRows('dur', 'logs')).toBe(3);
  });

  it('entries_deferred_by_budget: the segments a round leaves in the WAL by max_segments_per_round or max_bytes_per_round', async () => {
    const m = recordingTelemetry();
    const metrics = writerMetrics(m.telemetry);
    for (const i of [1, 2, 3]) await sealSegment(f.store, { tenant: 'budget', table: 'logs', hour: H }, [logRow(i)]);
    expect(await listSegments(f.store)).toHaveLength(3);

    expect(await committerWith({ metrics, maxSegmentsPerRound: 1 }).round()).toMatchObject({ segments: 1 });
    expect(await m.points('entries_deferred_by_budget')).toEqual([{ attributes: {}, value: 2 }]);
    // A byte budget below one segment still takes one: the other is deferred.
    expect(await committerWith({ metrics, maxBytesPerRound: 1 }).round()).toMatchObject({ segments: 1 });
    expect(await m.points('entries_deferred_by_budget')).toEqual([{ attributes: {}, value: 3 }]);
    // Within budget: nothing more is counted, and every row is stored.
    expect(await committerWith({ metrics }).round()).toMatchObject({ segments: 1 });
    expect(await m.points('entries_deferred_by_budget')).toEqual([{ attributes: {}, value: 3 }]);
    expect(await storedRows('budget', 'logs')).toBe(3);
    expect(await listSegments(f.store)).toHaveLength(0);
  });

  it('groups_deferred: a table group whose segment another writer committed first is left for the next round, stored once', async () => {
    const m = recordingTelemetry();
    await sealSegment(f.store, { tenant: 'race', table: 'logs', hour: H }, [logRow(1), logRow(2)]);
    const other = committerWith({});
    // Two writers racing for one segment. To make the race come out the same way every run, this
    // writer's catalog is the real one, except that its first append waits until the other
    // writer's whole round (commit and segment delete) is done: the other commit then lands
    // between this writer's read of the table and its own commit, as it does in production.
    let otherRound: Promise<unknown> | undefined;
    const appendAfterOther = async (...args: Parameters<SqlCatalog['appendFiles']>) => {
      await (otherRound ??= other.round());
      return f.catalog.appendFiles(...args);
    };
    const racing = new Proxy(f.catalog, {
      get(target, prop) {
        if (prop === 'appendFiles') return appendAfterOther;
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const stats = await committerWith({ catalog: racing, metrics: writerMetrics(m.telemetry) }).round();
    expect(await otherRound).toMatchObject({ commits: 1, rows: 2 });
    expect(stats).toMatchObject({ segments: 1, commits: 0 });
    expect(await m.points('groups_deferred')).toEqual([{ attributes: {}, value: 1 }]);
    expect(await storedRows('race', 'logs')).toBe(2);
    expect(await listSegments(f.store)).toHaveLength(0);
  });

  it('commit_failures kind permanent: a corrupt segment (quarantined) and a WAL record for an unknown table (dropped)', async () => {
    const m = recordingTelemetry();
    const quarantined = (await f.store.list('wal-quarantine/')).length;
    await f.store.put(formatSegmentKey('wal/', { timestampMs: Date.now(), instanceId: 'acc-corrupt', seq: 1 }), Buffer.from('not a WAL segment'));
    await sealSegment(f.store, { tenant: 'perm', table: 'no_such_table', hour: H }, [logRow(1)]);
    await sealSegment(f.store, { tenant: 'perm', table: 'logs', hour: H }, [logRow(2)]);
    const stats = await committerWith({ metrics: writerMetrics(m.telemetry) }).round();
    expect(stats).toMatchObject({ commits: 1, rows: 1 });
    expect(await m.points('commit_failures')).toEqual([{ attributes: { kind: 'permanent' }, value: 2 }]);
    // Permanent: nothing is left to retry; the corrupt segment waits for an operator.
    expect(await listSegments(f.store)).toHaveLength(0);
    expect(await f.store.list('wal-quarantine/')).toHaveLength(quarantined + 1);
    expect(await storedRows('perm', 'logs')).toBe(1);
  });

  it('attribute_type_mismatches: off_type for a value against an older pin, pin_conflict inside the batch that pins', async () => {
    const m = recordingTelemetry();
    const pins = new AttributeTypePins({ db: f.db, log: silentLogger() });
    const commit = async (rows: Array<Record<string, unknown>>) => {
      await sealSegment(f.store, { tenant: 'acme', table: 'logs', hour: H }, rows);
      expect(await committerWith({ pins, metrics: writerMetrics(m.telemetry) }).round()).toMatchObject({ commits: 1 });
    };
    await commit([logRow(10, { log_attr_int: { 'retry.count': 3 } })]);
    expect(await m.points('attribute_type_mismatches')).toEqual([]);
    await commit([logRow(11, { log_attr_str: { 'retry.count': 'three' } }), logRow(12, { resource_attr_double: { 'retry.count': 1.5 } })]);
    expect(await m.points('attribute_type_mismatches')).toEqual([{ attributes: { reason: 'off_type' }, value: 2 }]);
    // A new key in two types: pinned to the type with most values, the other value conflicts.
    await commit([logRow(13, { log_attr_bool: { mixed: true } }), logRow(14, { log_attr_bool: { mixed: false } }), logRow(15, { log_attr_str: { mixed: 'yes' } })]);
    expect(await m.points('attribute_type_mismatches')).toEqual(
      expect.arrayContaining([
        { attributes: { reason: 'off_type' }, value: 2 },
        { attributes: { reason: 'pin_conflict' }, value: 1 },
      ]),
    );
    expect(await m.points('attribute_type_mismatches')).toHaveLength(2);
    // The instrument counts what the dataset's mismatch records say.
    const stored = await listAttributeTypeMismatches(f.db, 'acme', 'default');
    const sum = (reason: string) => stored.filter((r) => r.reason === reason).reduce((n, r) => n + r.count, 0);
    expect([sum('off_type'), sum('pin_conflict')]).toEqual([2, 1]);
  });
});
