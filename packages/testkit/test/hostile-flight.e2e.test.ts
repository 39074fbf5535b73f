import * as grpc from '@grpc/grpc-js';
import { Int64, Table, tableToIPC, vectorFromArray } from 'apache-arrow';
import { flightDoGet, splitIpcStream } from '@floe/flight';
import {
  AnySchema,
  FlightActionSchema,
  FlightDataSchema,
  FlightDescriptorSchema,
  FlightDescriptor_DescriptorType,
  FlightInfoSchema,
  FlightPutResultSchema,
  FlightResultSchema,
  FlightSchemaResultSchema,
  FlightSqlCreatePreparedStatementSchema,
  FlightSqlDoPutPreparedStatementResultSchema,
  FlightSqlGetCatalogsSchema,
  FlightSqlGetDbSchemasSchema,
  FlightSqlGetSqlInfoSchema,
  FlightSqlGetTablesSchema,
  FlightSqlGetXdbcTypeInfoSchema,
  FlightSqlPreparedStatementQuerySchema,
  FlightSqlPreparedStatementResultSchema,
  FlightSqlStatementQuerySchema,
  anyPack,
  anyUnpack,
  create,
  fromBinary,
  toBinary,
} from '@floe/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * A hostile or careless client of the querier's Arrow Flight and Flight SQL surface: bytes that
 * are no protobuf on every RPC, tickets and statements of the largest size, tickets and handles
 * replayed by another tenant, a key bound to one dataset naming another, hostile catalog
 * patterns, and callers that cancel their calls. Every answer is a documented status; nothing
 * of another tenant or dataset is read; cancelled calls leave nothing running or waiting.
 * One slot and two waiting queries per tenant, so admission is observable.
 */
describe('hostile Flight clients (embedded)', () => {
  let floe: FloeUnderTest;
  let acme: string;
  let globex: string;
  /** A key of acme bound to its dataset `prod`, with the query scope. */
  let prodKey: string;
  const FLIGHT = '/arrow.flight.protocol.FlightService/';
  const raw = (x: Buffer) => x;
  // Runs until its caller cancels (or querier.query_timeout, far beyond any wait below).
  const SLOW = 'SELECT sum(a.range + b.range) AS s FROM range(1000000000000) a, range(1000000) b';

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { querier: { max_concurrent: 1, max_queued_per_tenant: 2, query_timeout: '300s' } } });
    acme = (await floe.bootstrap('acme')).api_key;
    globex = (await floe.bootstrap('globex')).api_key;
    const admin = async (path: string, body: unknown) => {
      const res = await fetch(`${floe.routerUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status, path).toBe(201);
      return (await res.json()) as Record<string, unknown>;
    };
    await admin('/api/v1/tenants/acme/datasets', { id: 'prod' });
    prodKey = (await admin('/api/v1/tenants/acme/api-keys', { scopes: ['query'], dataset_id: 'prod' })).secret as string;
    for (const [key, tenant] of [[acme, 'acme'], [globex, 'globex']] as const) {
      await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), `${tenant}-svc`);
      await waitFor(`${tenant} spans`, async () => ((await sql('SELECT count(*) AS n FROM traces', key, tenant)).toArray()[0]?.n > 0n ? true : undefined), 30_000, 200);
    }
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const sql = (text: string, key = acme, tenant = 'acme', signal?: AbortSignal) =>
    flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 60_000, ...(signal ? { signal } : {}) });
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => ({ code: grpc.status.OK, details: '' }),
      (err: grpc.ServiceError) => ({ code: err.code, details: err.details }),
    );
  const md = (key = acme, tenant = 'acme') => {
    const m = new grpc.Metadata();
    m.set('authorization', `Bearer ${key}`);
    m.set('x-tenant-id', tenant);
    return m;
  };
  type Answer = { code: number; details: string; messages: Buffer[] };
  /** A raw call of `method` with `bytes` as its request (or its request messages, for the streaming ones). */
  const call = (method: string, kind: 'unary' | 'server' | 'bidi', bytes: Uint8Array | Uint8Array[], meta = md()) =>
    new Promise<Answer>((resolve) => {
      const client = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
      const messages: Buffer[] = [];
      let done = false;
      const finish = (code: number, details: string) => {
        if (done) return;
        done = true;
        client.close();
        resolve({ code, details, messages });
      };
      const options = { deadline: Date.now() + 60_000 };
      if (kind === 'unary') {
        client.makeUnaryRequest(`${FLIGHT}${method}`, raw, raw, Buffer.from(bytes as Uint8Array), meta, options, (err, res) => {
          if (res) messages.push(res);
          finish(err?.code ?? grpc.status.OK, err?.details ?? '');
        });
        return;
      }
      const stream = kind === 'server' ? client.makeServerStreamRequest(`${FLIGHT}${method}`, raw, raw, Buffer.from(bytes as Uint8Array), meta, options) : client.makeBidiStreamRequest(`${FLIGHT}${method}`, raw, raw, meta, options);
      stream.on('data', (b: Buffer) => messages.push(b));
      stream.on('error', (err: grpc.ServiceError) => finish(err.code, err.details));
      stream.on('end', () => finish(grpc.status.OK, ''));
      if (kind === 'bidi') {
        const duplex = stream as grpc.ClientDuplexStream<Buffer, Buffer>;
        for (const m of bytes as Uint8Array[]) duplex.write(Buffer.from(m));
        duplex.end();
      }
    });
  const any = <T extends Parameters<typeof anyPack>[0]>(schema: T, value: Parameters<typeof create<T>>[1]) => toBinary(AnySchema, anyPack(schema, create(schema, value)));
  const descriptor = (cmd: Uint8Array) => toBinary(FlightDescriptorSchema, create(FlightDescriptorSchema, { type: FlightDescriptor_DescriptorType.CMD, cmd }));
  const ticketMessage = (ticket: Uint8Array) => Buffer.concat([Buffer.from([0x0a]), varint(ticket.length), Buffer.from(ticket)]);
  const varint = (n: number) => {
    const out: number[] = [];
    for (; n > 127; n >>>= 7) out.push((n & 127) | 128);
    out.push(n);
    return Buffer.from(out);
  };
  const statement = (query: string) => any(FlightSqlStatementQuerySchema, { query });
  const prepareAction = (query: string) => toBinary(FlightActionSchema, create(FlightActionSchema, { type: 'CreatePreparedStatement', body: any(FlightSqlCreatePreparedStatementSchema, { query }) }));
  /** CreatePreparedStatement: the handle, or the call's status. */
  const prepare = async (query: string, meta = md()) => {
    const answer = await call('DoAction', 'server', prepareAction(query), meta);
    if (answer.code !== grpc.status.OK) return { code: answer.code, details: answer.details };
    return { code: grpc.status.OK, handle: anyUnpack(fromBinary(AnySchema, fromBinary(FlightResultSchema, answer.messages[0]!).body), FlightSqlPreparedStatementResultSchema)!.preparedStatementHandle };
  };
  const preparedCommand = (handle: Uint8Array) => any(FlightSqlPreparedStatementQuerySchema, { preparedStatementHandle: handle });
  /** GetFlightInfo of a command, then DoGet of its endpoint's ticket, with the same credentials. */
  const execute = async (cmd: Uint8Array, key = acme, tenant = 'acme') => {
    const info = await call('GetFlightInfo', 'unary', descriptor(cmd), md(key, tenant));
    if (info.code !== grpc.status.OK) return { code: info.code, details: info.details };
    const ticket = fromBinary(FlightInfoSchema, info.messages[0]!).endpoint[0]!.ticket!.ticket;
    const got = await call('DoGet', 'server', ticketMessage(ticket), md(key, tenant));
    return { code: got.code, details: got.details, ticket };
  };
  const status = async () => ((await (await fetch(`${floe.querierAdminUrl}/status`)).json()) as { queries: { running: number; queued: number } }).queries;

  it('answers bytes that are no protobuf message with INVALID_ARGUMENT (UNIMPLEMENTED where Floe has no such RPC), never INTERNAL, on every Flight RPC', async () => {
    const garbage = Buffer.from([0xff, 0xff, 0xff]);
    const answers: Record<string, number> = {};
    for (const [method, kind] of [
      ['GetFlightInfo', 'unary'],
      ['GetSchema', 'unary'],
      ['PollFlightInfo', 'unary'],
      ['DoGet', 'server'],
      ['DoAction', 'server'],
      ['ListFlights', 'server'],
      ['ListActions', 'server'],
      ['DoPut', 'bidi'],
      ['DoExchange', 'bidi'],
    ] as const) {
      const answer = await call(method, kind, kind === 'bidi' ? [garbage] : garbage);
      answers[method] = answer.code;
      if (answer.code === grpc.status.INVALID_ARGUMENT) expect(answer.details).toBe(`the ${method} request is not a valid protobuf message`);
    }
    const I = grpc.status.INVALID_ARGUMENT;
    const U = grpc.status.UNIMPLEMENTED;
    expect(answers).toEqual({ GetFlightInfo: I, GetSchema: I, PollFlightInfo: U, DoGet: I, DoAction: I, ListFlights: U, ListActions: U, DoPut: I, DoExchange: U });
    // Handshake reads no field of its messages and answers once the credentials check out, so
    // the garbage may come after the answer; it is never a server fault.
    const handshake = await call('Handshake', 'bidi', [garbage]);
    expect([grpc.status.OK, I]).toContain(handshake.code);
    // Well-formed but empty or useless requests.
    expect(await call('DoGet', 'server', new Uint8Array())).toMatchObject({ code: I, details: expect.stringContaining('empty ticket') });
    expect(await call('GetFlightInfo', 'unary', toBinary(FlightDescriptorSchema, create(FlightDescriptorSchema, { type: FlightDescriptor_DescriptorType.PATH, path: ['acme', 'traces'] })))).toMatchObject({ code: I });
    expect(await call('DoAction', 'server', toBinary(FlightActionSchema, create(FlightActionSchema, { type: 'CreatePreparedStatement', body: garbage })))).toMatchObject({ code: I });
    expect(await call('DoAction', 'server', toBinary(FlightActionSchema, create(FlightActionSchema, { type: 'BeginTransaction', body: new Uint8Array() })))).toMatchObject({ code: U });
    // Updates, ingestion, Substrait plans and transactions: clearly not implemented, wherever they come.
    const packed = (name: string) => toBinary(AnySchema, create(AnySchema, { typeUrl: `type.googleapis.com/arrow.flight.protocol.sql.${name}`, value: new Uint8Array([0x0a, 0x01, 0x78]) }));
    for (const name of ['CommandStatementUpdate', 'CommandStatementSubstraitPlan', 'CommandStatementIngest', 'CommandPreparedStatementUpdate', 'ActionBeginTransactionRequest']) {
      expect(await call('GetFlightInfo', 'unary', descriptor(packed(name))), name).toMatchObject({ code: U, details: expect.stringContaining(name) });
      expect(await call('DoGet', 'server', ticketMessage(packed(name))), name).toMatchObject({ code: U });
      expect(await call('DoPut', 'bidi', [toBinary(FlightDataSchema, create(FlightDataSchema, { flightDescriptor: create(FlightDescriptorSchema, { type: FlightDescriptor_DescriptorType.CMD, cmd: packed(name) }) }))]), name).toMatchObject({ code: U });
    }
    expect(await call('GetFlightInfo', 'unary', descriptor(any(FlightSqlStatementQuerySchema, { query: 'SELECT 1', transactionId: new Uint8Array([1]) })))).toMatchObject({ code: U, details: expect.stringContaining('transactions') });
    // Still serving.
    expect((await sql('SELECT 42 AS answer')).toArray()[0]?.answer).toBe(42);
  });

  it('answers a ticket of 256 KiB of name characters at once (its table-name scan was quadratic: minutes of a blocked event loop), and refuses a longer Flight SQL statement up front', async () => {
    const long = `SELECT '${'x'.repeat(250_000)}' AS s`;
    expect(String((await sql(long)).toArray()[0]?.s).length).toBe(250_000);
    // A Flight SQL statement has the ticket's limit too: refused before it is planned, not after.
    const tooLong = `SELECT '${'x'.repeat(300_000)}' AS s FROM traces`;
    const refused = { code: grpc.status.RESOURCE_EXHAUSTED, details: 'a statement may be at most 262144 bytes of SQL' };
    expect(await call('GetFlightInfo', 'unary', descriptor(statement(tooLong)))).toMatchObject(refused);
    expect(await call('GetSchema', 'unary', descriptor(statement(tooLong)))).toMatchObject(refused);
    expect(await prepare(tooLong)).toMatchObject(refused);
    expect(await failure(sql(`SELECT '${'x'.repeat(300_000)}'`))).toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
  }, 60_000);

  it("keeps a key bound to one dataset to it: another dataset's three-part name is refused on every path, its own is served", async () => {
    const wrongDataset = { code: grpc.status.PERMISSION_DENIED, details: 'this API key may read only dataset "prod", not "default"' };
    expect(await failure(sql('SELECT count(*) AS n FROM acme.default.traces', prodKey))).toEqual(wrongDataset);
    expect(await failure(sql('SELECT count(*) AS n FROM "acme"."default"."traces"', prodKey))).toEqual(wrongDataset);
    expect(await execute(statement('SELECT count(*) AS n FROM acme.default.traces'), prodKey)).toMatchObject(wrongDataset);
    expect(await call('GetSchema', 'unary', descriptor(statement('SELECT * FROM acme.default.traces')), md(prodKey))).toMatchObject(wrongDataset);
    expect(await prepare('SELECT * FROM acme.default.logs', md(prodKey))).toMatchObject(wrongDataset);
    // Its own dataset (empty) answers, by either name; the tenant's key still reads every dataset.
    expect((await sql('SELECT count(*) AS n FROM acme.prod.traces', prodKey)).toArray()[0]?.n).toBe(0n);
    expect((await sql('SELECT count(*) AS n FROM traces', prodKey)).toArray()[0]?.n).toBe(0n);
    expect((await sql('SELECT count(*) AS n FROM acme.default.traces')).toArray()[0]?.n).toBe(3n);
  });

  it("runs a replayed ticket or handle as its new caller: another tenant's statement ticket reads the replayer's rows, a handle naming the first tenant is refused", async () => {
    const own = await execute(statement('SELECT DISTINCT service_name FROM traces'));
    expect(own.code).toBe(grpc.status.OK);
    const replayed = await flightDoGet({ url: floe.flightAddress, ticket: own.ticket!, metadata: { authorization: `Bearer ${globex}`, 'x-tenant-id': 'globex' }, deadlineMs: 30_000 });
    expect(replayed.toArray().map((r) => r.service_name)).toEqual(['globex-svc']);
    const handle = (await prepare('SELECT count(*) AS n FROM acme.default.traces')).handle!;
    const otherTenant = { code: grpc.status.PERMISSION_DENIED, details: 'access to tables of tenant "acme" is not allowed' };
    expect(await execute(preparedCommand(handle), globex, 'globex')).toMatchObject(otherTenant);
    const ticket = (await execute(preparedCommand(handle))).ticket!;
    expect(await failure(flightDoGet({ url: floe.flightAddress, ticket, metadata: { authorization: `Bearer ${globex}`, 'x-tenant-id': 'globex' }, deadlineMs: 30_000 }))).toEqual(otherTenant);
    // acme's key naming globex as its tenant, or no credentials at all.
    expect(await failure(flightDoGet({ url: floe.flightAddress, ticket, metadata: { authorization: `Bearer ${acme}`, 'x-tenant-id': 'globex' }, deadlineMs: 30_000 }))).toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    expect(await failure(flightDoGet({ url: floe.flightAddress, ticket, metadata: {}, deadlineMs: 30_000 }))).toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  });

  it('refuses bindings that are no Arrow stream or too large, and binds values only as values', async () => {
    const handle = (await prepare('SELECT count(*) AS n FROM traces WHERE duration_nano >= ?')).handle!;
    const flightDescriptor = create(FlightDescriptorSchema, { type: FlightDescriptor_DescriptorType.CMD, cmd: preparedCommand(handle) });
    const put = (messages: Array<{ dataHeader?: Uint8Array; dataBody: Uint8Array }>) =>
      call('DoPut', 'bidi', messages.map((m, i) => toBinary(FlightDataSchema, create(FlightDataSchema, { ...m, ...(i === 0 ? { flightDescriptor } : {}) }))));
    expect(await put([{ dataHeader: Buffer.from('not arrow at all'), dataBody: Buffer.from('{"x": 1}') }])).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect(await put([{ dataBody: Buffer.alloc(600 * 1024) }, { dataBody: Buffer.alloc(600 * 1024) }])).toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'DoPut uploads at most 1048576 bytes' });
    const params = [...splitIpcStream(tableToIPC(new Table({ p1: vectorFromArray([0n], new Int64()) }), 'stream'))].map((m) => ({ dataHeader: m.header, dataBody: m.body }));
    const bound = await put(params);
    expect(bound.code).toBe(grpc.status.OK);
    const boundHandle = fromBinary(FlightSqlDoPutPreparedStatementResultSchema, fromBinary(FlightPutResultSchema, bound.messages[0]!).appMetadata).preparedStatementHandle!;
    // Another tenant executing acme's bound handle reads its own rows.
    const ticket = (await execute(preparedCommand(boundHandle), globex, 'globex')).ticket!;
    const globexCount = await flightDoGet({ url: floe.flightAddress, ticket, metadata: { authorization: `Bearer ${globex}`, 'x-tenant-id': 'globex' }, deadlineMs: 30_000 });
    expect(globexCount.toArray()[0]?.n).toBe(3n);
  });

  it("answers catalog requests with hostile patterns and unknown ids with the caller's names only", async () => {
    const names = async (cmd: Uint8Array, key = acme, tenant = 'acme') => {
      const info = await call('GetFlightInfo', 'unary', descriptor(cmd), md(key, tenant));
      expect(info.code, info.details).toBe(grpc.status.OK);
      const ticket = fromBinary(FlightInfoSchema, info.messages[0]!).endpoint[0]!.ticket!.ticket;
      const table = await flightDoGet({ url: floe.flightAddress, ticket, metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 30_000 });
      return table.toArray().map((r) => r.toJSON() as Record<string, unknown>);
    };
    const tables = (pattern: string, catalog?: string) => names(any(FlightSqlGetTablesSchema, { tableNameFilterPattern: pattern, ...(catalog === undefined ? {} : { catalog }), includeSchema: false }));
    expect((await tables('%')).map((r) => `${r.catalog_name}.${r.db_schema_name}.${r.table_name}`)).toEqual(['logs', 'metric_exemplars', 'metrics', 'profiles', 'traces'].map((t) => `acme.default.${t}`));
    for (const pattern of ['%globex%', '\\%', "'; DROP TABLE traces; --", '"traces"', 'tr\u0000aces', '%'.repeat(256), '_'.repeat(6)]) {
      const found = await tables(pattern);
      expect(found.every((r) => r.catalog_name === 'acme'), pattern).toBe(true);
    }
    expect((await tables('_'.repeat(6))).map((r) => r.table_name)).toEqual(['traces']);
    expect(await tables('%', 'globex')).toEqual([]);
    expect(await names(any(FlightSqlGetDbSchemasSchema, { catalog: 'globex' }))).toEqual([]);
    expect(await names(any(FlightSqlGetDbSchemasSchema, { dbSchemaFilterPattern: '%' }))).toEqual([{ catalog_name: 'acme', db_schema_name: 'default' }]);
    expect(await names(any(FlightSqlGetCatalogsSchema, {}))).toEqual([{ catalog_name: 'acme' }]);
    expect((await names(any(FlightSqlGetSqlInfoSchema, { info: [4_000_000_000, 0, 99_999] }))).map((r) => r.info_name)).toEqual([0]);
    expect(await names(any(FlightSqlGetXdbcTypeInfoSchema, { dataType: 12_345 }))).toEqual([]);
    // A pattern longer than any name is refused, not scanned.
    expect(await call('GetFlightInfo', 'unary', descriptor(any(FlightSqlGetTablesSchema, { tableNameFilterPattern: 'x'.repeat(300) })))).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    // The SQL catalogs show the caller's own views and nothing of another tenant.
    const catalog = await sql("SELECT table_catalog, table_schema, table_name FROM information_schema.tables WHERE table_name <> 'traces' OR table_name = 'traces' UNION ALL SELECT catalog_name, schema_name, '' FROM information_schema.schemata WHERE 'acme.default.logs' <> ''");
    const cells = catalog.toArray().flatMap((r) => Object.values(r.toJSON() as Record<string, unknown>).map(String));
    expect(cells).toContain('traces');
    expect(cells.some((c) => c.includes('globex'))).toBe(false);
    for (const hostile of ['SELECT * FROM duckdb_databases()', 'SELECT * FROM duckdb_tables()', 'SELECT * FROM pragma_database_list', 'SELECT * FROM information_schema.views', "SELECT current_setting('allowed_paths')"]) {
      expect(await failure(sql(hostile)), hostile).toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    }
  });

  it('lets a cancelled DoGet (or GetFlightInfo) neither keep running nor keep its place in the queue: the tenant queues again at once', async () => {
    expect(await status()).toMatchObject({ running: 0, queued: 0 });
    // Rounds of a running query and two waiting (the tenant's whole queue), all cancelled.
    for (let round = 0; round < 3; round++) {
      const callers = [0, 1, 2].map(() => new AbortController());
      const calls = callers.map((c) => failure(sql(SLOW, acme, 'acme', c.signal)));
      await waitFor('one running, two waiting', async () => {
        const s = await status();
        return s.running === 1 && s.queued === 2 ? true : undefined;
      }, 20_000, 20);
      for (const c of callers) c.abort();
      for (const got of await Promise.all(calls)) expect(got.code).toBe(grpc.status.CANCELLED);
      // Before, the running query went on to querier.query_timeout (300 s) and the waiting ones
      // then ran, one after the other, for nobody.
      await waitFor('nothing running or waiting', async () => {
        const s = await status();
        return s.running === 0 && s.queued === 0 ? true : undefined;
      }, 20_000, 50);
    }
    // GetFlightInfo of a plain ticket runs it: cancelled, it stops too.
    const client = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
    const info = new Promise<number>((resolve) => {
      const unary = client.makeUnaryRequest(`${FLIGHT}GetFlightInfo`, raw, raw, Buffer.from(descriptor(Buffer.from(SLOW))), md(), (err) => resolve(err?.code ?? grpc.status.OK));
      void waitFor('GetFlightInfo running', async () => ((await status()).running === 1 ? true : undefined), 20_000, 20).then(() => unary.cancel());
    });
    expect(await info).toBe(grpc.status.CANCELLED);
    client.close();
    await waitFor('nothing running', async () => ((await status()).running === 0 ? true : undefined), 20_000, 50);
    expect((await sql('SELECT 1 AS one')).toArray()[0]?.one).toBe(1);
  }, 120_000);

  it('makes planning (CreatePreparedStatement, GetSchema of a statement) wait for a slot as a query does, so a flood of prepares holds no more DuckDB instances than querier.max_concurrent', async () => {
    const caller = new AbortController();
    const slow = failure(sql(SLOW, acme, 'acme', caller.signal));
    await waitFor('the slot taken', async () => ((await status()).running === 1 ? true : undefined), 20_000, 20);
    const waiting = [prepare('SELECT name FROM traces WHERE service_name = ?'), call('GetSchema', 'unary', descriptor(statement('SELECT name FROM traces')))] as const;
    await waitFor('two plans waiting', async () => ((await status()).queued === 2 ? true : undefined), 20_000, 20);
    expect(await prepare('SELECT 1')).toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED, details: expect.stringContaining('too many outstanding requests') });
    caller.abort();
    expect((await slow).code).toBe(grpc.status.CANCELLED);
    const prepared = await waiting[0]!;
    const schema = await waiting[1]!;
    expect(prepared.code).toBe(grpc.status.OK);
    expect(schema.code).toBe(grpc.status.OK);
    expect(Buffer.from(fromBinary(FlightSchemaResultSchema, schema.messages[0]!).schema).toString('latin1')).toContain('name');
    expect(await status()).toMatchObject({ running: 0, queued: 0 });
  }, 120_000);
  it("drops a router query from the querier queue when its HTTP client goes away (the router hands the querier the request's signal)", async () => {
    const caller = new AbortController();
    const slow = failure(sql(SLOW, acme, 'acme', caller.signal));
    await waitFor('the slot taken', async () => ((await status()).running === 1 ? true : undefined), 20_000, 20);
    // A trace search through the router, which waits behind the running query; then its client leaves.
    const client = new AbortController();
    const search = fetch(`${floe.routerUrl}/tracequery/api/search?limit=1`, { headers: { authorization: `Bearer ${acme}`, 'x-tenant-id': 'acme' }, signal: client.signal }).then(
      (r) => r.status,
      (e: Error) => e.name,
    );
    await waitFor('the search waiting', async () => ((await status()).queued === 1 ? true : undefined), 20_000, 20);
    client.abort();
    expect(await search).toBe('AbortError');
    // Before, it kept its place until the running query ended (here: never, before its caller cancels).
    await waitFor('the search gone from the queue', async () => {
      const s = await status();
      return s.running === 1 && s.queued === 0 ? true : undefined;
    }, 20_000, 20);
    caller.abort();
    expect((await slow).code).toBe(grpc.status.CANCELLED);
    await waitFor('nothing running or waiting', async () => {
      const s = await status();
      return s.running === 0 && s.queued === 0 ? true : undefined;
    }, 20_000, 50);
  }, 120_000);
});
