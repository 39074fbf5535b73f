import * as grpc from '@grpc/grpc-js';
import { createFlightSqlClient, type FlightSqlClient } from '@lakehouse-rs/flight-sql-client';
import { tableFromIPC } from 'apache-arrow';
import { flightDoGet } from '@floe/flight';
import { AnySchema, FlightDescriptorSchema, FlightDescriptor_DescriptorType, FlightSchemaResultSchema, FlightSqlGetSqlInfoSchema, FlightSqlGetXdbcTypeInfoSchema, FlightSqlStatementQuerySchema, anyPack, create, fromBinary, toBinary } from '@floe/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Arrow Flight SQL on the querier's Flight port, through a real Flight SQL client (arrow-flight's
 * FlightSqlServiceClient, the Rust crate, in @lakehouse-rs/flight-sql-client): a bearer key with
 * X-Tenant-ID, or Handshake's Basic <tenant>:<key> log-in as JDBC and ADBC clients do; statement
 * queries over the caller's tables; the catalog listings of <tenant>.<dataset>.<table>; and the
 * same lockdown as plain SQL tickets.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('Flight SQL (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  const tenant = 'analytics';

  const connect = (auth: { token?: string; username?: string; password?: string }, headers: Record<string, string> = {}): Promise<FlightSqlClient> => {
    const [host, port] = floe.flightAddress.split(':');
    return createFlightSqlClient({ host: host!, port: Number(port), tls: false, headers: Object.entries(headers).map(([k, value]) => ({ key: k, value })), ...auth });
  };
  const rows = (ipc: Buffer) => tableFromIPC(ipc).toArray().map((r) => r.toJSON() as Record<string, unknown>);

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap('bystander')).api_key;
    await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'fsql-shop');
    await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: otherKey, tenant: 'bystander' }), 'other-shop');
    const client = await connect({ token: key }, { 'x-tenant-id': tenant });
    await waitFor('the trace over Flight SQL', async () => (Number(rows(await client.query('SELECT count(*) AS n FROM traces'))[0]?.n) === 3 ? true : undefined), 30_000, 200);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('runs statements with a bearer key and X-Tenant-ID, over the caller\'s tables only', async () => {
    const client = await connect({ token: key }, { 'x-tenant-id': tenant });
    const spans = rows(await client.query("SELECT service_name, name FROM traces WHERE name = 'GET /checkout'"));
    expect(spans).toEqual([{ service_name: 'fsql-shop', name: 'GET /checkout' }]);
    // The three-part name a SQL client builds from the catalog listings.
    expect(rows(await client.query(`SELECT count(*) AS n FROM ${tenant}.default.traces`))).toEqual([{ n: 3n }]);
  });

  it('logs in with Handshake (Basic <tenant>:<key>) and then needs no tenant header', async () => {
    const client = await connect({ username: tenant, password: key });
    expect(rows(await client.query('SELECT DISTINCT service_name FROM traces'))).toEqual([{ service_name: 'fsql-shop' }]);
    // A refused log-in is checked on the raw Flight call below: this client aborts on one.
  });

  it('lists the catalog: the tenant, its dataset and its five tables with their schemas', async () => {
    const client = await connect({ token: key }, { 'x-tenant-id': tenant });
    expect(rows(await client.getCatalogs())).toEqual([{ catalog_name: tenant }]);
    expect(rows(await client.getDbSchemas({}))).toEqual([{ catalog_name: tenant, db_schema_name: 'default' }]);
    expect(rows(await client.getDbSchemas({ dbSchemaFilterPattern: 'def%' }))).toEqual([{ catalog_name: tenant, db_schema_name: 'default' }]);
    expect(rows(await client.getDbSchemas({ dbSchemaFilterPattern: 'other' }))).toEqual([]);
    const tables = tableFromIPC(await client.getTables({ includeSchema: true }));
    expect(tables.getChild('table_name')!.toArray()).toEqual(['logs', 'metric_exemplars', 'metrics', 'profiles', 'traces']);
    expect([...new Set(tables.getChild('table_type')!.toArray())]).toEqual(['TABLE']);
    const tracesSchema = Buffer.from(tables.getChild('table_schema')!.get(4) as Uint8Array).toString('latin1');
    expect(tracesSchema).toContain('trace_id');
    expect(tracesSchema).toContain('span_id');
    expect(rows(await client.getTables({ tableNameFilterPattern: 'tr%' })).map((r) => r.table_name)).toEqual(['traces']);
    expect(rows(await client.getTables({ tableNameFilterPattern: 'metric_' })).map((r) => r.table_name)).toEqual(['metrics']);
    expect(rows(await client.getTables({ tableNameFilterPattern: 'metric' }))).toEqual([]);
    expect(rows(await client.getTables({ tableTypes: ['VIEW'] }))).toEqual([]);
  });

  it('answers SqlInfo as JDBC drivers ask it first: a read-only SQL server named Floe, DuckDB\'s identifier rules', async () => {
    const ticket = toBinary(AnySchema, anyPack(FlightSqlGetSqlInfoSchema, create(FlightSqlGetSqlInfoSchema, { info: [0, 3, 4, 504, 531] })));
    const table = await flightDoGet({ url: floe.flightAddress, ticket, metadata: { authorization: `Bearer ${key}` }, deadlineMs: 20_000 });
    expect(table.toArray().map((r) => [r.info_name, r.value])).toEqual([
      [0, 'Floe'],
      [3, true],
      [4, true],
      [504, '"'],
      [531, 'tenant'],
    ]);
    // Key listings, which JDBC tools ask of every table: empty, Floe's tables have no keys.
    const keys = toBinary(AnySchema, create(AnySchema, { typeUrl: 'type.googleapis.com/arrow.flight.protocol.sql.CommandGetPrimaryKeys', value: new Uint8Array() }));
    const pk = await flightDoGet({ url: floe.flightAddress, ticket: keys, metadata: { authorization: `Bearer ${key}` }, deadlineMs: 20_000 });
    expect([pk.numRows, pk.schema.fields.map((f) => f.name)]).toEqual([0, ['catalog_name', 'db_schema_name', 'table_name', 'column_name', 'key_name', 'key_sequence']]);
    // JDBC's getTypeInfo: the VARCHAR type only, as asked by its XDBC code (12).
    const typeInfo = toBinary(AnySchema, anyPack(FlightSqlGetXdbcTypeInfoSchema, create(FlightSqlGetXdbcTypeInfoSchema, { dataType: 12 })));
    const types = await flightDoGet({ url: floe.flightAddress, ticket: typeInfo, metadata: { authorization: `Bearer ${key}` }, deadlineMs: 20_000 });
    expect(types.toArray().map((r) => [r.type_name, r.data_type, r.literal_prefix])).toEqual([['VARCHAR', 12, "'"]]);
  });

  it("answers GetSchema for a statement from its plan, without running it", async () => {
    const cmd = toBinary(AnySchema, anyPack(FlightSqlStatementQuerySchema, create(FlightSqlStatementQuerySchema, { query: 'SELECT service_name AS who, duration_nano FROM traces' })));
    const descriptor = toBinary(FlightDescriptorSchema, create(FlightDescriptorSchema, { type: FlightDescriptor_DescriptorType.CMD, cmd }));
    const client = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${key}`);
    const bytes = await new Promise<Buffer>((resolve, reject) =>
      client.makeUnaryRequest('/arrow.flight.protocol.FlightService/GetSchema', (x: Buffer) => x, (b: Buffer) => b, Buffer.from(descriptor), md, (err, res) => (err ? reject(err) : resolve(res!))),
    );
    client.close();
    const schema = Buffer.from(fromBinary(FlightSchemaResultSchema, bytes).schema).toString('latin1');
    expect(schema).toContain('who');
    expect(schema).toContain('duration_nano');
  });

  it('is locked down as plain SQL is: files, settings and other tenants are refused', async () => {
    const client = await connect({ token: key }, { 'x-tenant-id': tenant });
    // This client reports only that the statement failed; the codes and messages are the plain
    // ticket's (sql-security.e2e.test.ts), since both run the same path.
    for (const hostile of ["SELECT * FROM read_csv('/etc/passwd')", 'SELECT * FROM bystander.default.traces', "SET memory_limit = '1TB'", 'SELECT 1; SELECT 2']) {
      await expect(client.query(hostile), hostile).rejects.toThrow();
    }
    await expect((await connect({ token: 'not-a-key' }, { 'x-tenant-id': tenant })).query('SELECT 1')).rejects.toThrow();
    await expect((await connect({ token: otherKey }, { 'x-tenant-id': tenant })).query('SELECT 1')).rejects.toThrow();
  });

  it('refuses a Handshake with a wrong key (401) or another tenant\'s key (403), on the raw Flight call', async () => {
    const handshake = (user: string, secret: string) =>
      new Promise<{ code?: number; token?: string }>((resolve) => {
        const client = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
        const md = new grpc.Metadata();
        md.set('authorization', `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`);
        const call = client.makeBidiStreamRequest('/arrow.flight.protocol.FlightService/Handshake', (x: Buffer) => x, (b: Buffer) => b, md);
        let token: string | undefined;
        call.on('metadata', (m: grpc.Metadata) => (token = String(m.get('authorization')[0] ?? '')));
        call.on('data', () => undefined);
        call.on('error', (err: grpc.ServiceError) => resolve({ code: err.code }));
        call.on('end', () => resolve({ token }));
        call.write(Buffer.alloc(0));
        call.end();
      });
    expect(await handshake(tenant, key)).toEqual({ token: `Bearer ${key}` });
    expect(await handshake(tenant, 'not-a-key')).toEqual({ code: grpc.status.UNAUTHENTICATED });
    expect(await handshake(tenant, otherKey)).toEqual({ code: grpc.status.PERMISSION_DENIED });
  });
});
