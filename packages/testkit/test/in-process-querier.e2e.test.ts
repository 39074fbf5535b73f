import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFloe, type StartedFloe } from '@floe/cli';
import { loadConfig } from '@floe/config';
import { findTraceById, flightDoGet, tableRows, type QuerierCalls } from '@floe/flight';
import { createLogger } from '@floe/telemetry';

/**
 * `floe all` hands the router its querier's calls without gRPC. They must be the Flight calls in
 * everything but the wire: the same answers, and the same gRPC status and details for every
 * refusal (the router maps both paths' errors with one function).
 */
describe('the in-process querier answers as its Flight server does', () => {
  let floe: StartedFloe;
  let dir: string;
  let querier: QuerierCalls;
  let flight: string;
  let key: string;
  let otherKey: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'floe-inproc-'));
    const config = loadConfig({
      env: {},
      overrides: {
        log: { level: 'warn' },
        meta: { kind: 'pglite', data_dir: join(dir, 'meta') },
        storage: { kind: 'fs', root: join(dir, 'data'), cache_dir: join(dir, 'cache') },
        querier: { host: '127.0.0.1', port: 0, admin_port: 0, temp_dir: join(dir, 'tq') },
      },
    });
    floe = await startFloe(config, ['querier'], createLogger({ level: 'warn', name: 'in-process-test', fd: 2 }));
    querier = (floe.get('querier') as unknown as { inProcess: QuerierCalls }).inProcess;
    flight = `127.0.0.1:${floe.get('querier')!.ports.flight}`;
    key = (await floe.bootstrap('acme')).api_key;
    otherKey = (await floe.bootstrap('globex')).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const meta = (k: string) => ({ authorization: `Bearer ${k}`, 'x-tenant-id': 'acme' });
  const outcome = async (call: () => Promise<unknown>) => {
    try {
      return { value: await call() };
    } catch (err) {
      const e = err as { code?: number; details?: string };
      return { code: e.code, details: e.details };
    }
  };

  it('answers a query with the same rows', async () => {
    const ticket = Buffer.from(JSON.stringify({ sql: 'SELECT 40 + $1 AS x, count(*) AS spans FROM traces', params: [2] }));
    const local = await querier.doGet(meta(key), ticket, 20_000);
    const remote = await flightDoGet({ url: flight, ticket, metadata: meta(key), deadlineMs: 20_000 });
    expect(tableRows(local)).toEqual([{ x: 42n, spans: 0n }]);
    expect(tableRows(local)).toEqual(tableRows(remote));
    expect(local.schema.fields.map((f) => `${f.name}: ${String(f.type)}`)).toEqual(remote.schema.fields.map((f) => `${f.name}: ${String(f.type)}`));
  });

  it('refuses with the same gRPC status and details: bad key, wrong tenant, another tenant\'s table, bad SQL', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [meta('floe_nope_nope'), 'SELECT 1'],
      [meta(otherKey), 'SELECT 1'],
      [meta(key), 'SELECT * FROM globex.default.traces'],
      [meta(key), 'SELECT * FROM read_csv(\'/etc/passwd\')'],
      [meta(key), 'SELEC nonsense'],
    ];
    const codes: number[] = [];
    for (const [metadata, sql] of cases) {
      const ticket = Buffer.from(sql);
      const local = await outcome(() => querier.doGet(metadata, ticket, 20_000));
      const remote = await outcome(() => flightDoGet({ url: flight, ticket, metadata, deadlineMs: 20_000 }));
      expect(local.code, sql).toBeGreaterThan(0);
      expect(local).toEqual({ code: remote.code, details: remote.details });
      codes.push(local.code!);
    }
    // UNAUTHENTICATED, PERMISSION_DENIED, then refusals of the SQL.
    expect(codes.slice(0, 2)).toEqual([16, 7]);
  });

  it('names the kind of a refusal in the same trailer: an oversized ticket is too_large, a bad one bad_data', async () => {
    const kindOf = async (call: () => Promise<unknown>) => {
      try {
        await call();
        return undefined;
      } catch (err) {
        const e = err as { code?: number; metadata?: { get(name: string): unknown[] } };
        return [e.code, e.metadata?.get('x-floe-error-kind')[0]];
      }
    };
    const tickets: Array<[Buffer, [number, string]]> = [
      [Buffer.from(`SELECT '${'x'.repeat(300 * 1024)}'`), [8, 'too_large']],
      [Buffer.from('{"sql": 1}'), [3, 'bad_data']],
    ];
    for (const [ticket, expected] of tickets) {
      expect(await kindOf(() => querier.doGet(meta(key), ticket, 20_000))).toEqual(expected);
      expect(await kindOf(() => flightDoGet({ url: flight, ticket, metadata: meta(key), deadlineMs: 20_000 }))).toEqual(expected);
    }
  });

  it("finds traces the same way: an invalid id, a trace that does not exist", async () => {
    for (const id of [new Uint8Array(0), Buffer.alloc(16, 7)]) {
      const local = await outcome(() => querier.findTraceById(meta(key), id, 20_000));
      const remote = await outcome(() => findTraceById({ url: flight, traceId: id, metadata: meta(key), deadlineMs: 20_000 }));
      if ('value' in remote) expect(local.value).toEqual(remote.value);
      else expect(local).toEqual({ code: remote.code, details: remote.details });
    }
    expect((await outcome(() => querier.findTraceById(meta(key), new Uint8Array(0), 20_000))).code).toBe(3);
  });
});
