import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Hostile SQL over Flight: each attempt is refused with a clear error and the right gRPC code;
 * nothing reads files, settings, extensions or another tenant's table.
 */
describe('SQL over Flight is locked down', () => {
  let floe: FloeUnderTest;
  let acme: string;
  let globex: string;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    acme = (await floe.bootstrap('acme')).api_key;
    globex = (await floe.bootstrap('globex')).api_key;
    for (const [key, tenant] of [[acme, 'acme'], [globex, 'globex']] as const) {
      const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), `${tenant}-svc`);
      await waitFor(`${tenant} data`, async () => {
        const res = await fetch(`${floe.routerUrl}/tracequery/api/traces/${sent.traceId}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
        return res.status === 200 || undefined;
      });
    }
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const sql = (query: string, key = acme, tenant = 'acme') =>
    flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(query), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 });

  const refusal = async (query: string) => {
    try {
      await sql(query);
    } catch (err) {
      return { code: (err as { code: number }).code, details: String((err as { details?: string }).details) };
    }
    throw new Error(`query was not refused: ${query}`);
  };

  it('reads its own table', async () => {
    const t = await sql('SELECT DISTINCT service_name FROM traces');
    expect(t.toArray().map((r) => r!.service_name)).toEqual(['acme-svc']);
  });

  it.each([
    ["SELECT * FROM read_csv('/etc/passwd')", 7, /not allowed/],
    ["SELECT * FROM read_text('/etc/hostname')", 7, /not allowed/],
    ["SELECT * FROM read_parquet('/tmp/**/*.parquet')", 7, /not allowed/],
    ["COPY (SELECT 1) TO '/tmp/floe-evil.csv'", 7, /single SELECT/],
    ["ATTACH '/tmp/floe-evil.db' AS evil", 7, /single SELECT/],
    ["ATTACH ':memory:' AS m", 7, /single SELECT/],
    ['INSTALL httpfs', 7, /single SELECT/],
    ['LOAD httpfs', 7, /single SELECT/],
    ['SET threads = 64', 7, /single SELECT/],
    ["PRAGMA memory_limit = '100GB'", 7, /single SELECT/],
    ["SELECT getenv('HOME')", 7, /getenv.*not allowed|not allowed.*getenv/],
    ["SELECT current_setting('allowed_paths')", 7, /not allowed/],
    ['SELECT 1; SELECT 2', 7, /single SELECT/],
    ['SELECT 1; DROP VIEW traces', 7, /single SELECT/],
    ['SELECT * FROM globex.default.traces', 7, /tenant "globex"/],
    ['SELECT * FROM "globex"."default"."traces"', 7, /tenant "globex"/],
  ])('%s is refused', async (query, code, message) => {
    const r = await refusal(query);
    expect(r.code).toBe(code);
    expect(r.details).toMatch(message);
    expect(r.details).not.toContain(floe.dataDir);
  });

  it("another tenant's key cannot name acme as its tenant", async () => {
    await expect(sql('SELECT count(*) FROM traces', globex, 'acme')).rejects.toMatchObject({ code: 7 });
  });

  it('a wrong key is UNAUTHENTICATED', async () => {
    await expect(sql('SELECT 1', 'floe_0000000000000000_xxxxxxxx', 'acme')).rejects.toMatchObject({ code: 16 });
  });

  it('time predicates prune hour partitions without changing the answer', async () => {
    const all = await sql('SELECT count(*) AS n FROM traces');
    const now = BigInt(Date.now()) * 1_000_000n;
    const recent = await sql(`SELECT count(*) AS n FROM traces WHERE start_time_unix_nano >= ${now - 3_600_000_000_000n}`);
    expect(Number(recent.getChildAt(0)!.get(0))).toBe(Number(all.getChildAt(0)!.get(0)));
    const future = await sql(`SELECT count(*) AS n FROM traces WHERE "timestamp" > TIMESTAMPTZ '2999-01-01 00:00:00+00'`);
    expect(Number(future.getChildAt(0)!.get(0))).toBe(0);
  });

  it('an empty or missing table yields an empty result', async () => {
    const t = await sql("SELECT * FROM acme.nosuch.traces WHERE name = 'x'");
    expect(t.numRows).toBe(0);
    expect(t.schema.fields.map((f) => f.name)).toContain('trace_id');
  });
});
