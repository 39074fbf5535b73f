import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { sendSampleTrace, protoTraceExporter, startFloe, traceReadBack, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * What one tenant sends cannot stop the writer for the others. A log record with more distinct
 * attribute keys than a function call may take arguments (about 125k; one 5 MB OTLP JSON body,
 * or a high-cardinality exporter over a few requests) once failed every commit round, for every
 * tenant, across restarts. Now it is stored like any record, and another tenant's trace sent
 * after it reads back as usual.
 */
describe('the writer with an outsized record in the WAL', () => {
  let floe: FloeUnderTest;
  let wide: { api_key: string };
  let other: { api_key: string };

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    wide = await floe.bootstrap('wide-co');
    other = await floe.bootstrap('other-co');
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('stores a record of 140,000 attribute keys and keeps committing other tenants', async () => {
    const keys = 140_000;
    const nowNs = String(BigInt(Date.now()) * 1_000_000n);
    const body = JSON.stringify({
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'wide' } }] },
          scopeLogs: [{ logRecords: [{ timeUnixNano: nowNs, body: { stringValue: 'many keys' }, attributes: Array.from({ length: keys }, (_, i) => ({ key: `k${i}`, value: { intValue: String(i) } })) }] }],
        },
      ],
    });
    const res = await fetch(`${floe.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { authorization: `Bearer ${wide.api_key}`, 'x-tenant-id': 'wide-co', 'content-type': 'application/json' }, body });
    expect(res.status).toBe(200);

    const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: other.api_key, tenant: 'other-co' }), 'after-the-wide-record');
    expect(await traceReadBack(floe, sent.traceId, { authorization: `Bearer ${other.api_key}`, 'x-tenant-id': 'other-co' })).toEqual({ router: 3, flight: 3 });

    const asWide = { authorization: `Bearer ${wide.api_key}`, 'x-tenant-id': 'wide-co' };
    const stored = await waitFor('the wide record', async () => {
      const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n, max(cardinality(log_attr_int)) AS ints FROM logs WHERE service_name = 'wide'`), metadata: asWide, deadlineMs: 20_000 });
      const row = t.get(0)!.toJSON() as { n: bigint; ints: bigint | null };
      return Number(row.n) > 0 ? { n: Number(row.n), ints: Number(row.ints) } : undefined;
    }, 30_000, 300);
    expect(stored).toEqual({ n: 1, ints: keys });
  });
});
