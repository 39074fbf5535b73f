import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FloeConfigInput } from '@floe/config';
import { flightDoGet } from '@floe/flight';
import { migrate, openDb, type Db } from '@floe/meta';
import { createTestDatabase, startTestS3, plain, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Issue 4 end to end, in both modes: materialized labels and attribute type pins.
 *
 * A Floe without `schema.materialized_labels` creates a dataset (`legacy`, its tables provisioned
 * at creation) and stops. The same stores then run a Floe configured with three label keys, two
 * of which sanitise to the same column name: tables created from then on (the default dataset's,
 * made by the writer) have `label_k8s_pod_name`, `label_k8s_pod_name_2` and `label_user_id`, filled
 * from log / span attributes then resource attributes of any type; the legacy dataset's table
 * keeps its columns (spec 2, provisioning rule 7). Hand-built OTLP JSON sends each attribute with
 * the exact type wanted; rows are read back over SQL through Flight. A key sent first as int and
 * then as string is pinned int with one off_type mismatch, read from the metadata DB.
 */
const LABEL_KEYS = ['k8s.pod.name', 'K8S_POD_NAME', 'user.id'];
const LABEL_COLUMNS = ['label_k8s_pod_name', 'label_k8s_pod_name_2', 'label_user_id'];

type Value = { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean };
const attrs = (o: Record<string, Value>) => Object.entries(o).map(([key, value]) => ({ key, value }));

/** Stores that outlive one Floe: an embedded data directory, or a PostgreSQL database and an S3 bucket. */
interface SharedStores {
  config: FloeConfigInput;
  /** The metadata DB when the test can open it itself (cluster); embedded uses floe.metaQuery. */
  db?: Db;
  close(): Promise<void>;
}

async function sharedStores(mode: FloeMode): Promise<SharedStores> {
  if (mode === 'embedded') {
    const dir = mkdtempSync(join(tmpdir(), 'floe-attr-e2e-'));
    return {
      config: { meta: { kind: 'pglite', data_dir: join(dir, 'meta') }, storage: { kind: 'fs', root: join(dir, 'data') } },
      close: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const [database, s3] = await Promise.all([createTestDatabase(), startTestS3()]);
  const db = await openDb({ kind: 'pg', url: database.url, poolMax: 2 });
  await migrate(db);
  return {
    config: {
      meta: { kind: 'pg', url: database.url },
      storage: { kind: 's3', s3: { bucket: s3.bucket, endpoint: s3.endpoint, access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey } },
    },
    db,
    close: async () => {
      await db.close();
      await Promise.all([database.drop(), s3.stop()]);
    },
  };
}

describe.each<FloeMode>(['embedded', 'cluster'])('attributes end to end (%s)', (mode) => {
  let stores: SharedStores;
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'acme';

  beforeAll(async () => {
    stores = await sharedStores(mode);
    // Before the configuration: the tenant, and a dataset whose tables exist already.
    const before = await startFloe({ mode, config: stores.config });
    try {
      key = (await before.bootstrap(tenant)).api_key;
      const res = await fetch(`${before.routerUrl}/api/v1/tenants/${tenant}/datasets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'legacy' }),
      });
      expect(res.status).toBe(201);
      const listing = (await (await fetch(`${before.routerUrl}/api/v1/tenants/${tenant}/tables`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
        datasets: Array<{ dataset: string; tables: Array<{ name: string }> }>;
      };
      expect(listing.datasets.find((d) => d.dataset === 'legacy')?.tables.map((t) => t.name)).toEqual(expect.arrayContaining(['logs', 'traces']));
    } finally {
      await before.stop();
    }
    // The same stores, now with materialized labels configured.
    floe = await startFloe({ mode, config: { ...stores.config, schema: { materialized_labels: LABEL_KEYS } } });
  });
  afterAll(async () => {
    await floe?.stop();
    await stores?.close();
  });

  const meta = <R,>(sql: string, params?: unknown[]): Promise<R[]> => (stores.db ? stores.db.query<R>(sql, params).then((r) => r.rows) : floe.metaQuery<R>(sql, params));

  async function sql(text: string) {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 });
    return { columns: table.schema.fields.map((f) => f.name), rows: table.toArray().map((r) => plain(r) as Record<string, unknown>) };
  }
  const rowsOf = (text: string, count: number) =>
    waitFor(`${count} rows of ${text}`, async () => {
      const r = await sql(text);
      return r.rows.length === count ? r : undefined;
    }, 60_000, 200);

  async function send(path: '/v1/logs' | '/v1/traces', body: unknown, dataset?: string) {
    const res = await fetch(`${floe.otlpHttpUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json', ...(dataset ? { 'x-dataset-id': dataset } : {}) },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
  }
  const now = () => `${BigInt(Date.now()) * 1_000_000n}`;
  const logs = (service: string, resource: Record<string, Value>, records: Array<{ body: string; attributes: Record<string, Value> }>) => ({
    resourceLogs: [
      {
        resource: { attributes: attrs({ 'service.name': { stringValue: service }, ...resource }) },
        scopeLogs: [{ scope: { name: 'e2e', attributes: attrs({ 'k8s.pod.name': { stringValue: 'scope-is-no-source' } }) }, logRecords: records.map((r) => ({ timeUnixNano: now(), body: { stringValue: r.body }, attributes: attrs(r.attributes) })) }],
      },
    ],
  });

  it('log and resource attributes of any type fill label_<key> columns; the colliding key gets _2', async () => {
    await send(
      '/v1/logs',
      logs('labels', { 'k8s.pod.name': { stringValue: 'pod-res' }, K8S_POD_NAME: { intValue: '42' }, 'user.id': { stringValue: 'u-res' } }, [
        // The record's own attribute wins over the resource's.
        { body: 'a', attributes: { 'k8s.pod.name': { stringValue: 'pod-a' }, 'user.id': { intValue: '7' } } },
        { body: 'b', attributes: { K8S_POD_NAME: { doubleValue: 1.5 } } },
        { body: 'c', attributes: { 'user.id': { boolValue: true } } },
      ]),
    );
    const { columns, rows } = await rowsOf(`SELECT * FROM logs WHERE service_name = 'labels' ORDER BY body`, 3);
    expect(columns).toEqual(expect.arrayContaining(LABEL_COLUMNS));
    expect(rows.map((r) => [r.body, r.label_k8s_pod_name, r.label_k8s_pod_name_2, r.label_user_id])).toEqual([
      ['a', 'pod-a', '42', '7'],
      ['b', 'pod-res', '1.5', 'u-res'],
      ['c', 'pod-res', '42', 'true'],
    ]);
    // The attributes stay in their typed maps too.
    expect(rows[0]!.log_attr_str).toEqual({ 'k8s.pod.name': 'pod-a' });
    // A label column is a column: filters and grouping need no map.
    const grouped = await sql(`SELECT label_k8s_pod_name AS pod, count(*) AS n FROM acme.default.logs WHERE label_k8s_pod_name IS NOT NULL AND service_name = 'labels' GROUP BY 1 ORDER BY 1`);
    expect(grouped.rows.map((r) => [r.pod, Number(r.n)])).toEqual([
      ['pod-a', 1],
      ['pod-res', 2],
    ]);
  });

  it('span and resource attributes fill the same columns of the traces table', async () => {
    await send('/v1/traces', {
      resourceSpans: [
        {
          resource: { attributes: attrs({ 'service.name': { stringValue: 'labels' }, 'k8s.pod.name': { stringValue: 'pod-t' }, 'user.id': { stringValue: 'u-res' } }) },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '5b8aa5a2d2c872e8321cf37308d69df2',
                  spanId: '051581bf3cb55c13',
                  name: 'GET /cart',
                  kind: 2,
                  startTimeUnixNano: now(),
                  endTimeUnixNano: now(),
                  attributes: attrs({ 'user.id': { stringValue: 'u-span' }, K8S_POD_NAME: { boolValue: false } }),
                },
              ],
            },
          ],
        },
      ],
    });
    const { rows } = await rowsOf(`SELECT name, ${LABEL_COLUMNS.join(', ')} FROM traces WHERE service_name = 'labels'`, 1);
    expect(rows).toEqual([{ name: 'GET /cart', label_k8s_pod_name: 'pod-t', label_k8s_pod_name_2: 'false', label_user_id: 'u-span' }]);
  });

  it('a dataset whose tables existed before the configuration has no label columns and still takes data', async () => {
    await send('/v1/logs', logs('legacy', {}, [{ body: 'old', attributes: { 'k8s.pod.name': { stringValue: 'pod-old' } } }]), 'legacy');
    const { columns, rows } = await rowsOf(`SELECT * FROM acme.legacy.logs`, 1);
    expect(columns.filter((c) => c.startsWith('label_'))).toEqual([]);
    expect(rows[0]).toMatchObject({ body: 'old', log_attr_str: { 'k8s.pod.name': 'pod-old' } });
    await expect(sql(`SELECT label_k8s_pod_name FROM acme.legacy.logs`)).rejects.toThrow();
    const tracesColumns = (await sql(`SELECT * FROM acme.legacy.traces`)).columns;
    expect(tracesColumns.filter((c) => c.startsWith('label_'))).toEqual([]);
  });

  it('a key sent first as int then as string is pinned int, with one off_type mismatch; both values are stored', async () => {
    await send('/v1/logs', logs('pins', {}, [{ body: 'first', attributes: { 'retry.count': { intValue: '3' } } }]));
    await rowsOf(`SELECT body FROM logs WHERE service_name = 'pins'`, 1);
    const pin = await waitFor('the pin of retry.count', async () => {
      const rows = await meta<{ attr_type: string }>(`SELECT attr_type FROM attribute_type_pins WHERE tenant_id = $1 AND dataset_id = 'default' AND attr_key = 'retry.count'`, [tenant]);
      return rows[0];
    }, 60_000, 200);
    expect(pin.attr_type).toBe('int');

    await send('/v1/logs', logs('pins', {}, [{ body: 'second', attributes: { 'retry.count': { stringValue: 'three' } } }]));
    const mismatches = await waitFor('the off_type mismatch of retry.count', async () => {
      const rows = await meta<{ table_name: string; reason: string; count: string | number }>(
        `SELECT table_name, reason, count FROM attribute_type_mismatches WHERE tenant_id = $1 AND dataset_id = 'default' AND attr_key = 'retry.count'`,
        [tenant],
      );
      return rows.length > 0 ? rows : undefined;
    }, 60_000, 200);
    expect(mismatches.map((m) => ({ table: m.table_name, reason: m.reason, count: Number(m.count) }))).toEqual([{ table: 'logs', reason: 'off_type', count: 1 }]);
    expect((await meta<{ attr_type: string }>(`SELECT attr_type FROM attribute_type_pins WHERE tenant_id = $1 AND attr_key = 'retry.count'`, [tenant])).map((r) => r.attr_type)).toEqual(['int']);

    const { rows } = await rowsOf(`SELECT body, log_attr_int['retry.count'] AS i, log_attr_str['retry.count'] AS s FROM logs WHERE service_name = 'pins' ORDER BY time_unix_nano`, 2);
    expect(rows).toEqual([
      { body: 'first', i: 3n, s: null },
      { body: 'second', i: null, s: 'three' },
    ]);
  });
});
