import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import * as grpc from '@grpc/grpc-js';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { createObjectStore, formatSegmentKey, listSegments, newRecordId, WalAppender } from '@floe/storage';
import { startFloe, startTestS3, waitFor, type FloeUnderTest, type TestS3 } from '../src/index.ts';

/**
 * The object store and its files misbehaving behind Floe's back: damaged or missing data files,
 * table metadata and WAL segments, and a store that stops answering for a while. What is damaged
 * fails on its own (the tenant's queries answer the error envelope, the WAL sets a segment
 * aside); every other tenant's ingest, queries and compaction go on, and what was acknowledged
 * is stored once when the store is back.
 */

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));

interface Harness {
  floe: FloeUnderTest;
  keys: Record<string, string>;
}

const headersOf = (h: Harness, tenant: string) => ({ authorization: `Bearer ${h.keys[tenant]}`, 'x-tenant-id': tenant });

/** `n` log records of service `svc`, each body unique within the request (`<tag> <i>`). */
const postLogs = (h: Harness, tenant: string, n: number, tag: string) => {
  const nowNs = String(BigInt(Date.now()) * 1_000_000n);
  const body = JSON.stringify({
    resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] }, scopeLogs: [{ logRecords: Array.from({ length: n }, (_, i) => ({ timeUnixNano: nowNs, body: { stringValue: `${tag} ${i}` } })) }] }],
  });
  return fetch(`${h.floe.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { ...headersOf(h, tenant), 'content-type': 'application/json' }, body });
};

const sql = async (h: Harness, tenant: string, q: string) => (await flightDoGet({ url: h.floe.flightAddress, ticket: Buffer.from(q), metadata: headersOf(h, tenant), deadlineMs: 20_000 })).toArray();

/** Rows and distinct bodies of a tenant's logs: equal when nothing was stored twice. */
const stored = async (h: Harness, tenant: string, table = 'logs') => {
  const column = table === 'logs' ? 'body' : 'service_name || span_id';
  const row = (await sql(h, tenant, `SELECT count(*) AS n, count(DISTINCT ${column}) AS d FROM ${table}`))[0]!;
  return { rows: Number(row.n), distinct: Number(row.d) };
};

const waitStored = (h: Harness, tenant: string, rows: number) =>
  waitFor(`${rows} rows of ${tenant}`, async () => ((await stored(h, tenant)).rows >= rows ? stored(h, tenant) : undefined), 60_000, 200);

const logQuery = (h: Harness, tenant: string) =>
  fetch(`${h.floe.routerUrl}/logquery/loki/api/v1/query_range?query=${encodeURIComponent('{service_name="svc"}')}&limit=1000`, { headers: headersOf(h, tenant) });

const compactOnDemand = async (h: Harness) => {
  const ops = (path: string, body?: unknown) =>
    fetch(`${h.floe.routerUrl}/api/v1/ops/compact${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${h.floe.adminApiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const started = await ops('', {});
  expect(started.status).toBe(202);
  const { id } = (await started.json()) as { id: string };
  type Result = { failed: boolean; failedTables: number; failedGroups: number; partitionsCompacted: number };
  type Status = { requests: Array<{ id: string; finishedAt: string | null; result: Result | null }> };
  const done = await waitFor('the on-demand pass', async () => ((await (await ops('/status')).json()) as Status).requests.find((r) => r.id === id && r.finishedAt !== null), 60_000, 200);
  return done.result!;
};

/** The hour-partition data files of a tenant's logs table. */
const dataFiles = (h: Harness, tenant: string) =>
  filesUnder(join(h.floe.dataDir, 'data', 'warehouse', tenant, 'default', 'logs', 'data'))
    .filter((f) => f.endsWith('.parquet'))
    .sort();

describe('damaged files and WAL segments (cluster, local store)', () => {
  const h = { keys: {} } as Harness;
  const TENANTS = ['healthy', 'truncated', 'flipped', 'deleted', 'metabroken', 'walco', 'listcut', 'manigone'];

  beforeAll(async () => {
    h.floe = await startFloe({ mode: 'cluster', storage: 'fs', config: { compactor: { min_file_age: '0s', interval: '1h', open_hour_interval: '0s' } } });
    for (const t of TENANTS) h.keys[t] = (await h.floe.bootstrap(t)).api_key;
  }, 120_000);
  afterAll(async () => {
    await h.floe?.stop();
  });

  it('a data file truncated, bit-flipped or deleted fails its own tenant\'s queries with the error envelope; the others read, ingest and compact on', async () => {
    const damaged = ['truncated', 'flipped', 'deleted'];
    // Two commits each: two files in one hour partition, which the compactor merges.
    for (const round of [1, 2]) {
      for (const t of ['healthy', ...damaged]) expect((await postLogs(h, t, 200, `r${round}`)).status).toBe(200);
      for (const t of ['healthy', ...damaged]) expect(await waitStored(h, t, 200 * round)).toEqual({ rows: 200 * round, distinct: 200 * round });
    }
    truncateSync(dataFiles(h, 'truncated')[0]!, 100);
    const flipped = dataFiles(h, 'flipped')[0]!;
    const bytes = readFileSync(flipped);
    for (let i = 8; i < bytes.length - 8; i += 37) bytes[i]! ^= 0x5a;
    writeFileSync(flipped, bytes);
    const deletedFile = dataFiles(h, 'deleted')[0]!;
    unlinkSync(deletedFile);

    // The damaged file is named by its object key, never by where the querier reads it.
    const keyOf = (file: string) => relative(join(h.floe.dataDir, 'data'), file);
    const damagedKeys: Record<string, string> = { truncated: keyOf(dataFiles(h, 'truncated')[0]!), flipped: keyOf(flipped), deleted: keyOf(deletedFile) };
    const refusal = (t: string) =>
      new RegExp(`^table logs of dataset default cannot be read: its data file ${damagedKeys[t]!.replaceAll('.', '\\.')} is ${t === 'deleted' ? 'missing' : 'damaged'}; it needs an operator's repair \\(floe ops check-tables\\)$`);
    for (const t of damaged) {
      const res = await logQuery(h, t);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'error', errorType: 'unavailable', error: expect.stringMatching(refusal(t)) });
      // SQL over Flight (the per-query sandbox, where the Loki route runs on the warm instance).
      const failed = await sql(h, t, 'SELECT body FROM logs ORDER BY body').then(() => undefined, (err: unknown) => err);
      expect(failed).toMatchObject({ code: grpc.status.UNAVAILABLE, details: expect.stringMatching(refusal(t)) });
      // A mistake of the query's own is still the query's, damaged table or not.
      expect(await sql(h, t, 'SELEC body FROM logs').then(() => undefined, (err: unknown) => err)).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    }
    // Stored data that cannot be read waits for an operator's repair (503 naming the table and
    // the file), never the query's fault (400 once for a truncated file); the querier answered
    // those and still serves everyone else.
    const ok = await logQuery(h, 'healthy');
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { data: { result: Array<{ values: unknown[] }> } }).data.result.flatMap((s) => s.values)).toHaveLength(400);

    // Ingest goes on for every tenant, damaged ones included (new files beside the bad one).
    for (const t of ['healthy', ...damaged]) expect((await postLogs(h, t, 50, 'r3')).status).toBe(200);
    expect(await waitStored(h, 'healthy', 450)).toEqual({ rows: 450, distinct: 450 });

    // The pass reports the partitions it could not merge and merges the others.
    const pass = await compactOnDemand(h);
    expect(pass).toMatchObject({ failed: false, failedTables: 0 });
    expect(pass.failedGroups).toBe(damaged.length);
    expect(pass.partitionsCompacted).toBeGreaterThanOrEqual(1);
    expect(await stored(h, 'healthy')).toEqual({ rows: 450, distinct: 450 });
    expect(await logQuery(h, 'healthy').then((r) => r.status)).toBe(200);
  });

  it('a tenant\'s table metadata damaged: its queries answer the error envelope, other tenants commit on; repaired, its acknowledged rows are stored once', async () => {
    expect((await postLogs(h, 'metabroken', 10, 'before')).status).toBe(200);
    expect(await waitStored(h, 'metabroken', 10)).toEqual({ rows: 10, distinct: 10 });
    const current = filesUnder(join(h.floe.dataDir, 'data', 'warehouse', 'metabroken', 'default', 'logs', 'metadata'))
      .filter((f) => f.endsWith('.metadata.json'))
      .sort()
      .at(-1)!;
    const original = readFileSync(current);
    writeFileSync(current, '{"format-version": 2, "table-uuid": ');
    // Restarted, the writer and the querier read the table's metadata from the store again.
    for (const s of ['writer', 'querier'] as const) {
      await h.floe.kill(s);
      await h.floe.restart(s);
    }
    expect((await postLogs(h, 'metabroken', 5, 'during')).status).toBe(200);
    const res = await logQuery(h, 'metabroken');
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'error', errorType: 'unavailable', error: expect.stringMatching(/^table logs of dataset default cannot be read: .*floe ops check-tables/) });

    const base = (await stored(h, 'healthy')).rows;
    for (let i = 1; i <= 5; i++) {
      expect((await postLogs(h, 'healthy', 1, `beside-broken-${i}`)).status).toBe(200);
      expect(await waitStored(h, 'healthy', base + i)).toEqual({ rows: base + i, distinct: base + i });
    }
    const status = (await (await fetch(`${h.floe.writerAdminUrl}/status`)).json()) as { last_error: { message: string } | null };
    expect(status.last_error?.message).toMatch(/metadata/);

    writeFileSync(current, original);
    expect(await waitStored(h, 'metabroken', 15)).toEqual({ rows: 15, distinct: 15 });
    expect((await logQuery(h, 'metabroken')).status).toBe(200);
  });

  it('a manifest list cut short or a manifest deleted fails that table alone: its queries answer the error envelope, the writer and compactor go on with the rest', async () => {
    for (const t of ['listcut', 'manigone']) expect((await postLogs(h, t, 10, 'before')).status).toBe(200);
    for (const t of ['listcut', 'manigone']) expect(await waitStored(h, t, 10)).toEqual({ rows: 10, distinct: 10 });
    const metadataFiles = (t: string) => filesUnder(join(h.floe.dataDir, 'data', 'warehouse', t, 'default', 'logs', 'metadata'));
    truncateSync(metadataFiles('listcut').find((f) => f.includes('/snap-'))!, 30);
    unlinkSync(metadataFiles('manigone').find((f) => f.endsWith('-m0.avro'))!);
    // Restarted, nothing is answered from what the services read before the damage.
    for (const s of ['writer', 'querier', 'compactor'] as const) {
      await h.floe.kill(s);
      await h.floe.restart(s);
    }
    for (const t of ['listcut', 'manigone']) {
      expect((await postLogs(h, t, 5, 'during')).status).toBe(200);
      const res = await logQuery(h, t);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'error', errorType: 'unavailable', error: expect.stringMatching(/^table logs of dataset default cannot be read: .*floe ops check-tables/) });
    }
    const base = (await stored(h, 'healthy')).rows;
    expect((await postLogs(h, 'healthy', 3, 'beside-manifests')).status).toBe(200);
    expect(await waitStored(h, 'healthy', base + 3)).toEqual({ rows: base + 3, distinct: base + 3 });
    expect(await compactOnDemand(h)).toMatchObject({ failed: false, failedTables: 2 });
    expect(await stored(h, 'healthy')).toEqual({ rows: base + 3, distinct: base + 3 });
  });

  it('WAL segments empty, cut mid-record, of garbage, huge or misnamed are set aside or ignored; a sound one beside them is committed, and ingest goes on', async () => {
    // Segments made as an acceptor makes them, in a scratch store, then placed in the cluster's WAL.
    const scratchDir = mkdtempSync(join(tmpdir(), 'floe-hostile-wal-'));
    const scratch = createObjectStore({ kind: 'fs', root: scratchDir });
    const wal = new WalAppender(scratch, { instanceId: 'hostile' });
    const hour = Math.floor(Date.now() / 3_600_000);
    const nowNs = String(BigInt(Date.now()) * 1_000_000n);
    await wal.append(
      ['wal-1', 'wal-2'].map((svc, i) => ({
        header: { tenant: 'walco', dataset: 'default', table: 'traces' as const, hour, rows: 1, id: newRecordId() },
        payload: Buffer.from(`${JSON.stringify({ trace_id: String(i + 1).padStart(32, '0'), span_id: String(i + 1).padStart(16, '0'), name: 'op', service_name: svc, start_time_unix_nano: nowNs })}\n`),
      })),
    );
    await wal.close();
    const sound = readFileSync(scratch.localPath((await listSegments(scratch))[0]!.key)!);
    rmSync(scratchDir, { recursive: true, force: true });

    const walDir = join(h.floe.dataDir, 'data', 'wal');
    const name = (seq: number) => formatSegmentKey('', { timestampMs: Date.now(), instanceId: 'hostile', seq });
    const bad: Record<string, Buffer> = {
      [name(2)]: sound.subarray(0, sound.length - 20), // cut in the second record
      [name(3)]: Buffer.alloc(0),
      [name(4)]: Buffer.from('not a write-ahead log segment at all'),
      [name(5)]: sound.subarray(0, 7), // cut in the header
      [name(6)]: Buffer.alloc(64 * 1024 * 1024, 0x41),
    };
    // Each file appears whole (written beside, then renamed in), as an acceptor's segments do: the
    // writer polls the WAL, and a 64 MB file still being written was once read half-way.
    mkdirSync(walDir, { recursive: true });
    const place = (n: string, b: Buffer) => {
      const tmp = join(h.floe.dataDir, `placing-${n}`);
      writeFileSync(tmp, b);
      renameSync(tmp, join(walDir, n));
    };
    place(name(1), sound);
    for (const [n, b] of Object.entries(bad)) place(n, b);
    place('not-a-segment.wal', sound);

    const base = (await stored(h, 'healthy')).rows;
    expect((await postLogs(h, 'healthy', 5, 'beside-bad-wal')).status).toBe(200);
    expect(await waitStored(h, 'healthy', base + 5)).toEqual({ rows: base + 5, distinct: base + 5 });
    const spans = await waitFor('the sound segment committed', async () => {
      const rows = await sql(h, 'walco', 'SELECT service_name FROM traces ORDER BY 1').catch(() => []);
      return rows.length >= 2 ? rows.map((r) => r.service_name as string) : undefined;
    }, 30_000, 200);
    expect(spans).toEqual(['wal-1', 'wal-2']);

    const quarantineDir = join(h.floe.dataDir, 'data', 'wal-quarantine');
    await waitFor('the damaged segments set aside', async () => (Object.keys(bad).every((n) => readdirSync(quarantineDir).includes(n)) ? true : undefined), 30_000, 200);
    for (const [n, b] of Object.entries(bad)) expect(readFileSync(join(quarantineDir, n)).equals(b)).toBe(true);
    // A name that is not a segment's is not Floe's: left where it is. (The broken manifest
    // list's table above still holds a segment of its own in the WAL, as it should.)
    const left = readdirSync(walDir);
    expect(left).toContain('not-a-segment.wal');
    expect(left.filter((n) => n.includes('-hostile-'))).toEqual([]);
  });
});

describe('the object store unreachable for a while, or its data files damaged (cluster, S3)', () => {
  const h = { keys: {} } as Harness;
  let s3: TestS3;
  let proxy: Server;
  let reachable = true;
  const connections = new Set<Socket>();
  /** Every connection to the store is dropped, and new ones refused, until reachable again. */
  const cutOff = () => {
    reachable = false;
    for (const c of connections) c.destroy();
    connections.clear();
  };

  beforeAll(async () => {
    s3 = await startTestS3();
    const target = new URL(s3.endpoint);
    proxy = createServer((client) => {
      if (!reachable) return void client.destroy();
      const server = connect(Number(target.port), target.hostname);
      connections.add(client).add(server);
      const end = () => {
        client.destroy();
        server.destroy();
        connections.delete(client);
        connections.delete(server);
      };
      client.on('error', end).on('close', end);
      server.on('error', end).on('close', end);
      client.pipe(server).pipe(client);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const endpoint = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    h.floe = await startFloe({
      mode: 'cluster',
      storage: 'fs',
      config: {
        storage: { kind: 's3', s3: { bucket: s3.bucket, endpoint, region: 'us-east-1', access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey, force_path_style: true } },
        compactor: { min_file_age: '0s', interval: '1h', open_hour_interval: '0s' },
      },
    });
    for (const t of ['steady', 'other', 's3cut', 's3flipped', 's3deleted']) h.keys[t] = (await h.floe.bootstrap(t)).api_key;
  }, 120_000);
  afterAll(async () => {
    await h.floe?.stop();
    await new Promise((r) => proxy?.close(r));
    await s3?.stop();
  });

  it('ingest answers 503 (never acknowledged) while the store is away; back, the writer catches up and the compactor merges, nothing lost or stored twice', async () => {
    let acked = 0;
    const send = async (n: number, tag: string) => {
      const res = await postLogs(h, 'steady', n, tag);
      if (res.status === 200) acked += n;
      return res;
    };
    expect((await send(10, 'before')).status).toBe(200);
    expect(await waitStored(h, 'steady', 10)).toEqual({ rows: 10, distinct: 10 });

    cutOff();
    const during = await Promise.all(Array.from({ length: 5 }, (_, i) => send(7, `during-${i}`)));
    for (const res of during) {
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'error', errorType: 'unavailable', error: expect.any(String) });
    }
    // A compaction pass while the store is away fails as a whole and changes nothing.
    expect(await compactOnDemand(h)).toMatchObject({ failed: true });
    reachable = true;

    for (let i = 0; i < 5; i++) expect((await send(3, `after-${i}`)).status).toBe(200);
    expect((await postLogs(h, 'other', 4, 'other')).status).toBe(200);
    expect(acked).toBe(25);
    expect(await waitStored(h, 'steady', acked)).toEqual({ rows: acked, distinct: acked });
    expect(await waitStored(h, 'other', 4)).toEqual({ rows: 4, distinct: 4 });

    expect(await compactOnDemand(h)).toMatchObject({ failed: false, failedTables: 0, failedGroups: 0 });
    expect(await stored(h, 'steady')).toEqual({ rows: acked, distinct: acked });
  });

  it('a data file cut short, bit-flipped or deleted in the bucket fails its own tenant\'s queries with 503 naming the table and the file', async () => {
    const bucket = new S3Client({ region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    const damaged = ['s3cut', 's3flipped', 's3deleted'];
    const keys: Record<string, string> = {};
    try {
      for (const t of damaged) expect((await postLogs(h, t, 200, 'r1')).status).toBe(200);
      // Damaged as soon as the writer has put it, before a query fetches it into the querier's cache.
      for (const t of damaged) {
        keys[t] = await waitFor(`the data file of ${t}`, async () => {
          const listed = await bucket.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `warehouse/${t}/default/logs/data/` }));
          return listed.Contents?.map((o) => o.Key!).find((k) => k.endsWith('.parquet'));
        }, 30_000, 100);
      }
      const bytes = await (await bucket.send(new GetObjectCommand({ Bucket: s3.bucket, Key: keys.s3flipped }))).Body!.transformToByteArray();
      for (let i = 8; i < bytes.length - 8; i += 37) bytes[i]! ^= 0x5a;
      await bucket.send(new PutObjectCommand({ Bucket: s3.bucket, Key: keys.s3flipped, Body: bytes }));
      const cut = await (await bucket.send(new GetObjectCommand({ Bucket: s3.bucket, Key: keys.s3cut }))).Body!.transformToByteArray();
      await bucket.send(new PutObjectCommand({ Bucket: s3.bucket, Key: keys.s3cut, Body: cut.subarray(0, 100) }));
      await bucket.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: keys.s3deleted }));

      for (const t of damaged) {
        const expected = `table logs of dataset default cannot be read: its data file ${keys[t]} is ${t === 's3deleted' ? 'missing' : 'damaged'}; it needs an operator's repair (floe ops check-tables)`;
        // Until the writer has committed the file the table reads empty.
        const refused = await waitFor(`${t} refused`, async () => {
          const res = await logQuery(h, t);
          return res.status === 200 ? undefined : { status: res.status, body: (await res.json()) as unknown };
        }, 30_000, 200);
        expect(refused).toEqual({ status: 503, body: { status: 'error', errorType: 'unavailable', error: expected } });
        const failed = await sql(h, t, 'SELECT count(*) FROM logs').then(() => undefined, (err: unknown) => err);
        expect(failed).toMatchObject({ code: grpc.status.UNAVAILABLE, details: expected });
      }
      expect((await logQuery(h, 'steady')).status).toBe(200);
    } finally {
      bucket.destroy();
    }
  });
});
