import * as grpc from '@grpc/grpc-js';
import { createFlightSqlClient, type FlightSqlClient } from '@lakehouse-rs/flight-sql-client';
import { DateDay, Int64, Table, TimeUnit, Timestamp, Utf8, Vector, makeData, tableFromIPC, tableToIPC, vectorFromArray, type DataType } from 'apache-arrow';
import { flightDoGet, splitIpcStream } from '@floe/flight';
import { AnySchema, FlightDataSchema, FlightDescriptorSchema, FlightDescriptor_DescriptorType, FlightInfoSchema, FlightPutResultSchema, FlightSchemaResultSchema, FlightSqlCreatePreparedStatementSchema, FlightSqlDoPutPreparedStatementResultSchema, FlightSqlPreparedStatementQuerySchema, FlightSqlPreparedStatementResultSchema, FlightActionSchema, FlightResultSchema, anyUnpack, FlightSqlGetSqlInfoSchema, FlightSqlGetTablesSchema, FlightSqlGetXdbcTypeInfoSchema, FlightSqlStatementQuerySchema, anyPack, create, fromBinary, toBinary } from '@floe/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postProfiles, protoLogExporter, protoMetricExporter, protoTraceExporter, sampleProfilesRequest, sendSampleLogs, sendSampleMetrics, sendSampleTrace, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

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
    const shop = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'fsql-shop');
    await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: otherKey, tenant: 'bystander' }), 'other-shop');
    // The other tables get rows too (all but metric_exemplars: these metrics carry none), so
    // prepared schemas are compared against real files.
    const creds = { apiKey: key, tenant };
    await sendSampleLogs(protoLogExporter(floe.otlpHttpUrl, creds), 'fsql-shop');
    await sendSampleMetrics(protoMetricExporter(floe.otlpHttpUrl, creds), 'fsql-shop');
    expect((await postProfiles(floe.otlpHttpUrl, creds, sampleProfilesRequest('fsql-shop', { traceId: shop.traceId, spanId: shop.spanIds[0]! }, BigInt(Date.now()) * 1_000_000n))).status).toBe(200);
    const client = await connect({ token: key }, { 'x-tenant-id': tenant });
    await waitFor('the trace over Flight SQL', async () => (Number(rows(await client.query('SELECT count(*) AS n FROM traces'))[0]?.n) === 3 ? true : undefined), 30_000, 200);
    for (const table of ['logs', 'metrics', 'profiles']) {
      await waitFor(`rows in ${table}`, async () => (Number(rows(await client.query(`SELECT count(*) AS n FROM ${table}`))[0]?.n) > 0 ? true : undefined), 30_000, 200);
    }
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

  describe('prepared statements with bound parameters (CreatePreparedStatement, DoPut, GetFlightInfo, DoGet)', () => {
    const FLIGHT = '/arrow.flight.protocol.FlightService/';
    const raw = (x: Buffer) => x;
    const auth = (secret = key) => {
      const md = new grpc.Metadata();
      md.set('authorization', `Bearer ${secret}`);
      md.set('x-tenant-id', tenant);
      return md;
    };
    const prepare = async (query: string) => {
      const client = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
      const body = toBinary(AnySchema, anyPack(FlightSqlCreatePreparedStatementSchema, create(FlightSqlCreatePreparedStatementSchema, { query })));
      const action = Buffer.from(toBinary(FlightActionSchema, create(FlightActionSchema, { type: 'CreatePreparedStatement', body })));
      const results = await new Promise<Buffer[]>((resolve, reject) => {
        const out: Buffer[] = [];
        const call = client.makeServerStreamRequest(`${FLIGHT}DoAction`, raw, raw, action, auth());
        call.on('data', (b: Buffer) => out.push(b));
        call.on('error', reject);
        call.on('end', () => resolve(out));
      });
      client.close();
      const result = anyUnpack(fromBinary(AnySchema, fromBinary(FlightResultSchema, results[0]!).body), FlightSqlPreparedStatementResultSchema)!;
      return result.preparedStatementHandle;
    };
    /** The result and parameter schemas CreatePreparedStatement answered, as `name:type` lists. */
    const schemasOf = async (query: string) => {
      const client = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
      const body = toBinary(AnySchema, anyPack(FlightSqlCreatePreparedStatementSchema, create(FlightSqlCreatePreparedStatementSchema, { query })));
      const action = Buffer.from(toBinary(FlightActionSchema, create(FlightActionSchema, { type: 'CreatePreparedStatement', body })));
      const answer = await new Promise<{ body?: Buffer; code?: number; details?: string }>((resolve) => {
        const call = client.makeServerStreamRequest(`${FLIGHT}DoAction`, raw, raw, action, auth());
        let got: Buffer | undefined;
        call.on('data', (b: Buffer) => (got = b));
        call.on('error', (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
        call.on('end', () => resolve({ body: got! }));
      });
      client.close();
      if (!answer.body) return { code: answer.code, details: answer.details };
      const result = anyUnpack(fromBinary(AnySchema, fromBinary(FlightResultSchema, answer.body).body), FlightSqlPreparedStatementResultSchema)!;
      // An encapsulated schema message is an IPC stream's first message: end it and read the stream.
      const fields = (bytes: Uint8Array) => tableFromIPC(Buffer.concat([bytes, Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])])).schema.fields.map((f) => `${f.name}:${String(f.type)}`);
      return { columns: fields(result.datasetSchema), parameters: fields(result.parameterSchema) };
    };
    const command = (handle: Uint8Array) => toBinary(AnySchema, anyPack(FlightSqlPreparedStatementQuerySchema, create(FlightSqlPreparedStatementQuerySchema, { preparedStatementHandle: handle })));
    /** DoPut of the parameter batch, as Flight SQL clients bind: the handle the server answers, or the call's error code and message. */
    const bind = (handle: Uint8Array, params: Table, secret = key, cmd = command(handle)) =>
      new Promise<{ handle?: Uint8Array; code?: number; details?: string }>((resolve) => {
        const client = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
        const call = client.makeBidiStreamRequest(`${FLIGHT}DoPut`, raw, raw, auth(secret));
        const answers: Buffer[] = [];
        call.on('data', (b: Buffer) => answers.push(b));
        let failed = false;
        call.on('error', (err: grpc.ServiceError) => {
          failed = true;
          client.close();
          resolve({ code: err.code, details: err.details });
        });
        call.on('end', () => {
          // A failed call ends its stream too, after the error.
          if (failed) return;
          if (answers.length === 0) return resolve({});
          client.close();
          const appMetadata = fromBinary(FlightPutResultSchema, answers[0]!).appMetadata;
          resolve({ handle: fromBinary(FlightSqlDoPutPreparedStatementResultSchema, appMetadata).preparedStatementHandle! });
        });
        const descriptor = create(FlightDescriptorSchema, { type: FlightDescriptor_DescriptorType.CMD, cmd });
        [...splitIpcStream(tableToIPC(params, 'stream'))].forEach((m, i) => {
          const data = create(FlightDataSchema, { dataHeader: m.header, dataBody: m.body, ...(i === 0 ? { flightDescriptor: descriptor } : {}) });
          call.write(Buffer.from(toBinary(FlightDataSchema, data)));
        });
        call.end();
      });
    /** GetFlightInfo of the bound statement, then DoGet of its endpoint's ticket. */
    const execute = async (handle: Uint8Array) => {
      const client = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
      const descriptor = Buffer.from(toBinary(FlightDescriptorSchema, create(FlightDescriptorSchema, { type: FlightDescriptor_DescriptorType.CMD, cmd: command(handle) })));
      const info = await new Promise<Buffer>((resolve, reject) =>
        client.makeUnaryRequest(`${FLIGHT}GetFlightInfo`, raw, raw, descriptor, auth(), (err, res) => (err ? reject(err) : resolve(res!))),
      );
      client.close();
      const ticket = fromBinary(FlightInfoSchema, info).endpoint[0]!.ticket!.ticket;
      const table = await flightDoGet({ url: floe.flightAddress, ticket, metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 });
      return table.toArray().map((r) => r.toJSON() as Record<string, unknown>);
    };
    const params = (service: string, minDuration: bigint) =>
      new Table({ p1: vectorFromArray([service], new Utf8()), p2: vectorFromArray([minDuration], new Int64()) });

    it('runs a statement with the values a client binds, as values, never as SQL text', async () => {
      const handle = await prepare('SELECT name FROM traces WHERE service_name = ? AND duration_nano >= ? ORDER BY name');
      const all = await connect({ token: key }, { 'x-tenant-id': tenant });
      const expected = rows(await all.query("SELECT name FROM traces WHERE service_name = 'fsql-shop' AND duration_nano >= 0 ORDER BY name"));
      expect(expected.length).toBe(3);

      const bound = await bind(handle, params('fsql-shop', 0n));
      expect(bound.code).toBeUndefined();
      expect(await execute(bound.handle!)).toEqual(expected);
      // Bound again with other values: the handle the server answered carries them.
      expect(await execute((await bind(handle, params('fsql-shop', 10n ** 15n))).handle!)).toEqual([]);
      // A value that would be an injection as text is only a value.
      expect(await execute((await bind(handle, params("x' OR '1'='1", 0n))).handle!)).toEqual([]);
      // The other tenant's spans stay out of reach whatever is bound.
      expect(await execute((await bind(handle, params('other-shop', 0n))).handle!)).toEqual([]);
    });

    it('binds instants at their precision and type: zoned µs as TIMESTAMPTZ, naive as TIMESTAMP, naive ns as TIMESTAMP_NS, dates as DATE', async () => {
      const instant = (type: DataType, raw: bigint) => new Vector([makeData({ type, length: 1, nullCount: 0, data: new BigInt64Array([raw]) } as never)]);
      const ns = 1_796_472_000_123_456_789n;
      const types = await bind(await prepare('SELECT typeof($1) AS a, typeof($2) AS b, typeof($3) AS c, typeof($4) AS d, CAST($3 AS VARCHAR) AS ns, epoch_us($1) AS us'), new Table({
        p1: instant(new Timestamp(TimeUnit.NANOSECOND, 'UTC'), ns),
        p2: instant(new Timestamp(TimeUnit.MICROSECOND), 1_796_472_000_123_456n),
        p3: instant(new Timestamp(TimeUnit.NANOSECOND), ns),
        p4: vectorFromArray([Date.UTC(2026, 11, 5)], new DateDay()),
      }));
      expect(await execute(types.handle!)).toEqual([{ a: 'TIMESTAMP WITH TIME ZONE', b: 'TIMESTAMP', c: 'TIMESTAMP_NS', d: 'DATE', ns: '2026-12-05 12:00:00.123456789', us: 1_796_472_000_123_456n }]);

      // One microsecond after the shop's first span leaves it out: at millisecond precision the bound would keep it.
      const all = await connect({ token: key }, { 'x-tenant-id': tenant });
      const spans = rows(await all.query("SELECT name, epoch_us(\"timestamp\") AS us FROM traces WHERE service_name = 'fsql-shop' ORDER BY us, name")) as Array<{ name: string; us: bigint }>;
      expect(spans.length).toBe(3);
      const later = spans.filter((s) => s.us > spans[0]!.us).map((s) => ({ name: s.name }));
      const after = await bind(await prepare("SELECT name FROM traces WHERE service_name = 'fsql-shop' AND \"timestamp\" >= ? ORDER BY epoch_us(\"timestamp\"), name"), new Table({ p1: instant(new Timestamp(TimeUnit.MICROSECOND, 'UTC'), spans[0]!.us + 1n) }));
      expect(await execute(after.handle!)).toEqual(later);
    });

    it('answers the statement’s result and parameter schemas when it is prepared, and refuses what a run would refuse', async () => {
      expect(await schemasOf('SELECT name, duration_nano FROM traces WHERE service_name = ? AND duration_nano > ?')).toEqual({
        columns: ['name:Utf8', 'duration_nano:Int64'],
        parameters: ['1:Utf8', '2:Int64'],
      });
      // What preparing answers is what running answers, for every column of every table.
      for (const table of ['traces', 'logs', 'metrics', 'metric_exemplars', 'profiles']) {
        const prepared = await schemasOf(`SELECT * FROM ${table}`);
        const ran = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT * FROM ${table}`), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 });
        expect(prepared.columns, table).toEqual(ran.schema.fields.map((f) => `${f.name}:${String(f.type)}`));
      }
      // A column whose type waits on a value, and parameters DuckDB cannot type: no result schema yet, parameters as text.
      expect(await schemasOf('SELECT typeof($1) AS t, $2 AS x')).toEqual({ columns: [], parameters: ['1:Utf8', '2:Utf8'] });
      expect(await schemasOf('SELECT count(*) FROM bystander.default.traces')).toMatchObject({ code: grpc.status.PERMISSION_DENIED });
      expect(await schemasOf('SELECT nope FROM traces')).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringContaining('nope') });
    });

    it('refuses bad bindings with clear errors: row counts, parameter counts, credentials, other commands', async () => {
      const handle = await prepare('SELECT count(*) AS n FROM traces WHERE service_name = $1');
      const two = new Table({ p1: vectorFromArray(['a', 'b'], new Utf8()) });
      expect(await bind(handle, two)).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringContaining('one row') });
      const tooMany = await bind(handle, params('fsql-shop', 1n));
      await expect(execute(tooMany.handle!)).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringContaining('parameter') });
      expect(await bind(handle, params('fsql-shop', 1n), 'not-a-key')).toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      const update = toBinary(AnySchema, create(AnySchema, { typeUrl: 'type.googleapis.com/arrow.flight.protocol.sql.CommandStatementUpdate', value: new Uint8Array() }));
      expect(await bind(handle, params('x', 1n), key, update)).toMatchObject({ code: grpc.status.UNIMPLEMENTED });
      const one = await bind(handle, new Table({ p1: vectorFromArray(['fsql-shop'], new Utf8()) }));
      expect(await execute(one.handle!)).toEqual([{ n: 3n }]);
    });
  });

  // The command handling is the same code in both modes: one run is enough.
  if (mode === 'embedded') {
    it('answers every corrupted command with a client error, never an internal one, and stays up', async () => {
      const FLIGHT = '/arrow.flight.protocol.FlightService/';
      const raw = (x: Buffer) => x;
      const md = new grpc.Metadata();
      md.set('authorization', `Bearer ${key}`);
      md.set('x-tenant-id', tenant);
      const client = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
      /** The status of GetFlightInfo of `cmd` (0 when it succeeded), or of DoAction of `action`. */
      const flightInfo = (cmd: Uint8Array) =>
        new Promise<number>((resolve) => {
          const descriptor = Buffer.from(toBinary(FlightDescriptorSchema, create(FlightDescriptorSchema, { type: FlightDescriptor_DescriptorType.CMD, cmd })));
          client.makeUnaryRequest(`${FLIGHT}GetFlightInfo`, raw, raw, descriptor, md, (err) => resolve(err ? err.code : 0));
        });
      const doAction = (type: string, body: Uint8Array) =>
        new Promise<number>((resolve) => {
          const call = client.makeServerStreamRequest(`${FLIGHT}DoAction`, raw, raw, Buffer.from(toBinary(FlightActionSchema, create(FlightActionSchema, { type, body }))), md);
          call.on('data', () => undefined);
          call.on('error', (err: grpc.ServiceError) => resolve(err.code));
          call.on('end', () => resolve(0));
        });
      const any = <T extends Parameters<typeof anyPack>[0]>(schema: T, value: Parameters<typeof create<T>>[1]) => toBinary(AnySchema, anyPack(schema, create(schema, value)));
      const commands = [
        any(FlightSqlStatementQuerySchema, { query: "SELECT name FROM traces WHERE service_name = 'fsql-shop'" }),
        any(FlightSqlGetTablesSchema, { catalog: tenant, dbSchemaFilterPattern: 'def%', tableNameFilterPattern: 'tr_ces', tableTypes: ['TABLE'], includeSchema: true }),
        any(FlightSqlGetSqlInfoSchema, { info: [0, 1, 500] }),
        any(FlightSqlGetXdbcTypeInfoSchema, { dataType: 12 }),
      ];
      const bad: string[] = [];
      const seen = new Set<number>();
      /** Every byte of `valid` flipped in turn, eight calls at a time. */
      const mutate = async (what: string, valid: Uint8Array, call: (bytes: Uint8Array) => Promise<number>) => {
        for (let at = 0; at < valid.length; at += 8) {
          const codes = await Promise.all(
            Array.from({ length: Math.min(8, valid.length - at) }, (_, k) => {
              const bytes = Uint8Array.from(valid);
              bytes[at + k]! ^= 0xff;
              return call(bytes);
            }),
          );
          codes.forEach((code, k) => {
            seen.add(code);
            if (code === grpc.status.INTERNAL || code === grpc.status.UNKNOWN) bad.push(`${what} byte ${at + k}: ${grpc.status[code]}`);
          });
        }
      };
      for (const [i, cmd] of commands.entries()) await mutate(`command ${i}`, cmd, flightInfo);
      await mutate('CreatePreparedStatement', any(FlightSqlCreatePreparedStatementSchema, { query: 'SELECT name FROM traces WHERE service_name = ?' }), (body) => doAction('CreatePreparedStatement', body));
      expect(bad).toEqual([]);
      // Most corruptions are refused as the client's fault; some still read as a valid command.
      expect(seen.has(grpc.status.INVALID_ARGUMENT)).toBe(true);
      // The server took all of it and still answers.
      expect(await flightInfo(commands[0]!)).toBe(0);
      client.close();
    }, 120_000);
  }

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
