import { DuckDBInstance } from '@duckdb/node-api';
import { icebergRead } from 'icebird';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { tracesTable } from '@floe/schema';
import { installFileFetch, protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * The Iceberg tables are real: an independent reader (icebird) reads a Floe table from its
 * metadata file and gets the rows SQL over Flight returns; the Parquet field ids match the table
 * schema; the catalog rows sit where Spark/Trino/PyIceberg SQL catalogs look for them.
 */
describe('Iceberg interoperability', () => {
  let floe: FloeUnderTest;
  let key: string;
  let restoreFetch: () => void;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap('acme')).api_key;
    const exporter = protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant: 'acme' });
    const traces = [];
    for (let i = 0; i < 4; i++) traces.push(await sendSampleTrace(exporter, `svc-${i % 2}`));
    await waitFor('all traces committed', async () => {
      const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT count(*) AS n FROM traces'), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' }, deadlineMs: 10_000 });
      return Number(t.getChildAt(0)!.get(0)) === 12 || undefined;
    });
    restoreFetch = installFileFetch();
  });
  afterAll(async () => {
    restoreFetch?.();
    await floe?.stop();
  });

  it('catalog rows follow the JDBC/SQL catalog layout', async () => {
    const rows = await floe.metaQuery<{ catalog_name: string; table_namespace: string; table_name: string; metadata_location: string }>(
      "SELECT catalog_name, table_namespace, table_name, metadata_location FROM iceberg_tables WHERE table_namespace = 'acme.default'",
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ catalog_name: 'floe', table_namespace: 'acme.default', table_name: 'traces' });
    expect(rows[0]!.metadata_location).toMatch(/^file:\/\/.*\/warehouse\/acme\/default\/traces\/metadata\/\d{5}-[0-9a-f-]+\.metadata\.json$/);
    const ns = await floe.metaQuery("SELECT property_key FROM iceberg_namespace_properties WHERE catalog_name = 'floe' AND namespace = 'acme.default'");
    expect(ns.length).toBeGreaterThan(0);
  });

  it('icebird reads the same rows as SQL over Flight, and field ids match the schema', async () => {
    const [row] = await floe.metaQuery<{ metadata_location: string }>("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'acme.default' AND table_name = 'traces'");
    const metadataUrl = row!.metadata_location;
    const metadata = JSON.parse(await (await fetch(metadataUrl)).text());
    expect(metadata['format-version']).toBe(2);
    expect(metadata['partition-specs'][0].fields[0]).toMatchObject({ transform: 'hour', 'source-id': 1, name: 'timestamp_hour' });
    const tableUrl = metadataUrl.replace(/\/metadata\/[^/]+$/, '');
    const rows = await icebergRead({ tableUrl, metadata });
    const fromIcebird = rows.map((r) => `${r.trace_id}/${r.span_id}/${r.name}/${r.service_name}`).sort();

    const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT trace_id, span_id, name, service_name FROM traces'), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' }, deadlineMs: 10_000 });
    const fromFlight = t.toArray().map((r) => `${r!.trace_id}/${r!.span_id}/${r!.name}/${r!.service_name}`).sort();
    expect(fromIcebird).toHaveLength(12);
    expect(fromIcebird).toEqual(fromFlight);

    // Field ids in every data file equal the schema's ids, map key/value children included.
    const schemaIds = new Map<string, number>(metadata.schemas[0].fields.map((f: { name: string; id: number }) => [f.name, f.id]));
    const files: string[] = [];
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    const list = await duck.runAndReadAll(`SELECT file FROM glob('${tableUrl.replace('file://', '')}/data/**/*.parquet')`);
    for (const r of list.getRows()) files.push(String(r[0]));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const fields = (await duck.runAndReadAll(`SELECT name, field_id FROM parquet_schema('${file}') WHERE field_id IS NOT NULL`)).getRowObjectsJson() as Array<{ name: string; field_id: string }>;
      for (const c of tracesTable.columns) {
        const f = fields.find((x) => x.name === c.name);
        expect(Number(f?.field_id), `${file} ${c.name}`).toBe(schemaIds.get(c.name));
      }
      const keyIds = fields.filter((x) => x.name === 'key').map((x) => Number(x.field_id));
      expect(keyIds).toEqual(Object.values(tracesTable.mapIds).map((m) => m.keyId));
    }
    duck.closeSync();
  });
});
