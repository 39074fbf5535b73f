import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * router.send_timeout: Node keeps whatever a client has not read in memory while its connection
 * stays open, so a client that stops reading a large answer would hold it for ever. A response
 * whose client takes none of it for send_timeout is cut off; one read normally is whole, and a
 * query is not cut while it runs (the timer is armed only once the answer is being sent).
 */
describe('router.send_timeout (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'stalled';
  const LINES = 16;
  const LINE_BYTES = 1024 * 1024;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { router: { send_timeout: '1s' }, writer: { flush_interval: '200ms' } } });
    key = (await floe.bootstrap(tenant)).api_key;
    const nowNs = String(BigInt(Date.now()) * 1_000_000n);
    // In halves: one request of them all would pass acceptor.max_body_bytes.
    for (const half of [0, 1]) {
      const records = Array.from({ length: LINES / 2 }, (_, i) => ({ timeUnixNano: nowNs, body: { stringValue: `${half * (LINES / 2) + i} ${'x'.repeat(LINE_BYTES)}` } }));
      const body = JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'big' } }] }, scopeLogs: [{ logRecords: records }] }] });
      const res = await fetch(`${floe.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json' }, body });
      expect(res.status).toBe(200);
    }
    await waitFor('the lines queryable', async () => ((await read()).lines === LINES ? true : undefined), 60_000, 500);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const path = () => `/logquery/api/v1/query_range?query=${encodeURIComponent('{service_name="big"}')}&limit=${LINES}&since=1h`;
  const read = async () => {
    const res = await fetch(`${floe.routerUrl}${path()}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    const body = (await res.json()) as { data: { result: Array<{ values: unknown[] }> } };
    return { status: res.status, lines: body.data.result.reduce((n, s) => n + s.values.length, 0) };
  };

  it('answers a client that reads in full', async () => {
    expect(await read()).toEqual({ status: 200, lines: LINES });
  });

  it('cuts off a client that stops reading the answer, and serves the next one', async () => {
    const { port, hostname } = new URL(floe.routerUrl);
    const socket = connect(Number(port), hostname);
    let received = 0;
    let closed = false;
    socket.on('close', () => (closed = true));
    socket.on('error', () => {});
    socket.once('data', (chunk: Buffer) => {
      received += chunk.length;
      // Reads nothing more: the answer (16 MB and more) waits in the kernel's buffers and Node's.
      socket.pause();
    });
    socket.write(`GET ${path()} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\nX-Tenant-ID: ${tenant}\r\n\r\n`);
    // Five times send_timeout without reading; then what the kernel kept for the client is read:
    // the router cut the connection off, so the answer ends there, far short of its 16 MB.
    await new Promise((r) => setTimeout(r, 5000));
    socket.on('data', (c: Buffer) => (received += c.length));
    socket.resume();
    await waitFor('the stalled connection closed by the router', async () => (closed ? true : undefined), 30_000, 100);
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(LINES * LINE_BYTES);
    expect(await read()).toEqual({ status: 200, lines: LINES });
  });
});
