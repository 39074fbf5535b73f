import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureFloeTable, type TableHandle } from '@floe/iceberg';
import type { RetentionStream } from '@floe/limits';
import { silentLogger } from '@floe/telemetry';
import { Compactor } from './compactor.ts';
import { partitionRetentionMs, STREAM_RETENTION_PROPERTY_PREFIX } from './stream-retention.ts';
import { allRows, appendRowsFile, openFixture, type Fixture } from './test-support.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

describe('partitionRetentionMs', () => {
  const rule = (periodMs: number): RetentionStream => ({ selector: '{a="b"}', priority: 0, periodMs, source: 'instance' });
  it('is the table retention without rules, the longest period with them, and none while unmatched lines stay forever', () => {
    expect(partitionRetentionMs(DAY_MS, [])).toBe(DAY_MS);
    expect(partitionRetentionMs(DAY_MS, [rule(HOUR_MS), rule(10 * DAY_MS)])).toBe(10 * DAY_MS);
    expect(partitionRetentionMs(DAY_MS, [rule(HOUR_MS)])).toBe(DAY_MS);
    expect(partitionRetentionMs(0, [rule(HOUR_MS)])).toBe(0);
  });
});

/**
 * Per-stream retention in a compaction pass, on a real catalog and file store: an audit rule
 * keeps its lines ten days (longer than the table's day), a debug rule two hours, other lines a
 * day. Hours past every period go whole; inside that, each class of lines goes once its hour is
 * past its period, the first matching rule deciding; a line that arrives late for a cleared hour
 * goes at the next pass; dropping a rule drops its mark.
 */
describe('stream retention in a compaction pass (pglite catalog, fs store)', () => {
  let f: Fixture;
  const nowHour = Math.floor(Date.now() / HOUR_MS);
  const now = nowHour * HOUR_MS + 600_000;
  const rules: RetentionStream[] = [
    { selector: '{service_name="audit"}', priority: 5, periodMs: 10 * DAY_MS, source: 'tenant' },
    { selector: '{service_name=~"debug|audit"}', priority: 1, periodMs: 2 * HOUR_MS, source: 'instance' },
  ];
  let streams = rules;

  beforeAll(async () => {
    f = await openFixture('pglite');
  });
  afterAll(async () => {
    await f?.close();
  });

  const lines = (hour: number, services: string[]) =>
    new TextEncoder().encode(
      services
        .map((service, i) =>
          JSON.stringify({
            time_unix_nano: ((BigInt(hour) * BigInt(HOUR_MS) + BigInt(60_000 * (i + 1))) * 1_000_000n).toString(),
            service_name: service,
            body: `${service} at ${nowHour - hour}h ago`,
            body_type: 'string',
            resource_attr_str: { 'service.name': service },
          }),
        )
        .join('\n') + '\n',
    );
  const bodies = async (handle: TableHandle) => (await allRows((await f.catalog.planFiles(handle)).map((p) => f.store.localPath(p.key)!))).map((j) => (JSON.parse(j) as { body: string }).body).sort();
  const compactor = () =>
    new Compactor({
      ...f,
      log: silentLogger(),
      targetFileBytes: 128 * 1024 * 1024,
      snapshotRetentionMs: HOUR_MS,
      minFileAgeMs: 10 * DAY_MS,
      retentionMs: async () => DAY_MS,
      retentionStreams: async () => streams,
      now: () => now,
    });

  it('keeps each line for the period of the first rule that matches it', async () => {
    let handle = await ensureFloeTable(f.catalog, 'acme', 'default', 'logs');
    for (const ago of [1, 3, 30, 300]) handle = (await appendRowsFile(f, handle, 'logs', nowHour - ago, lines(nowHour - ago, ['audit', 'debug', 'app']))).handle;

    const pass = await compactor().pass();
    expect(pass.failedTables).toBe(0);
    // Hour 300 is past every period and goes whole (3 lines); the debug rule rewrites hours 3 and
    // 30, then the unmatched lines' day rewrites hour 30 again (3 lines in all).
    expect(pass.retention).toMatchObject({ partitions: 1, files: 1, streamFiles: 3, rows: 3 + 3 });
    handle = (await f.catalog.loadTable('acme.default', 'logs'))!;
    expect(await bodies(handle)).toEqual(['app at 1h ago', 'app at 3h ago', 'audit at 1h ago', 'audit at 30h ago', 'audit at 3h ago', 'debug at 1h ago'].sort());
    const marks = Object.keys(handle.metadata.properties).filter((k) => k.startsWith(STREAM_RETENTION_PROPERTY_PREFIX));
    expect(marks).toHaveLength(3);

    // Nothing left to do: the next pass looks once at the files the first one wrote and deletes
    // nothing; the one after neither reads nor commits (the marks say so). A late debug line for a
    // cleared hour goes at the next pass.
    expect((await compactor().pass()).retention).toMatchObject({ streamFiles: 0, rows: 0 });
    const before = (await f.catalog.loadTable('acme.default', 'logs'))!.metadataLocation;
    expect((await compactor().pass()).retention).toMatchObject({ streamFiles: 0, rows: 0 });
    expect((await f.catalog.loadTable('acme.default', 'logs'))!.metadataLocation).toBe(before);
    await appendRowsFile(f, (await f.catalog.loadTable('acme.default', 'logs'))!, 'logs', nowHour - 30, lines(nowHour - 30, ['debug']));
    expect((await compactor().pass()).retention).toMatchObject({ streamFiles: 1, rows: 1 });
    expect(await bodies((await f.catalog.loadTable('acme.default', 'logs'))!)).not.toContain('debug at 30h ago');
  });

  it('drops the marks of rules that are gone', async () => {
    streams = [rules[0]!];
    await compactor().pass();
    const handle = (await f.catalog.loadTable('acme.default', 'logs'))!;
    expect(Object.keys(handle.metadata.properties).filter((k) => k.startsWith(STREAM_RETENTION_PROPERTY_PREFIX))).toHaveLength(2);
    // Audit lines are kept; the rest go after a day, as before.
    expect((await bodies(handle)).filter((b) => b.startsWith('audit'))).toHaveLength(3);
  });
});
