import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { arrivalDeadlines, carriesBody } from './arrival-deadline.ts';

describe('carriesBody', () => {
  it.each([
    ['a GET without framing headers', {}, false],
    ['Content-Length: 0', { 'content-length': '0' }, false],
    ['Content-Length: 12', { 'content-length': '12' }, true],
    ['Transfer-Encoding: chunked', { 'transfer-encoding': 'chunked' }, true],
  ])('HTTP/1.1, %s: %s', (_name, headers, expected) => {
    expect(carriesBody({ headers } as unknown as IncomingMessage)).toBe(expected);
  });

  it.each([
    ['HEADERS ending the stream', true, false],
    ['HEADERS followed by DATA', false, true],
  ])('HTTP/2, %s: %s', (_name, endAfterHeaders, expected) => {
    expect(carriesBody({ headers: {}, stream: { endAfterHeaders } } as unknown as IncomingMessage)).toBe(expected);
  });
});

describe('arrivalDeadlines', () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
  });

  it('leaves a request whose body is in to be processed past the deadline, and cuts one still arriving', async () => {
    const ms = 200;
    const arrivals = arrivalDeadlines(ms);
    server = createServer((req, res) => {
      arrivals.expect(req, res);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        arrivals.arrived(req);
        // Processing outlasts the deadline several times over: it is no longer counted.
        setTimeout(() => res.end(`got ${Buffer.concat(chunks).toString()}`), ms * 5);
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

    const res = await fetch(url, { method: 'POST', body: 'whole' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('got whole');

    // A body that never finishes: the request fails, its connection closed unanswered.
    const stalled = new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(new TextEncoder().encode('par')) });
    await expect(fetch(url, { method: 'POST', body: stalled, duplex: 'half' } as RequestInit)).rejects.toThrow();
  });

  it('cutArriving ends every upload still arriving and none already in', async () => {
    const arrivals = arrivalDeadlines(10 * 60_000);
    const requested: Array<() => void> = [];
    let processing: (() => void) | undefined;
    server = createServer((req, res) => {
      arrivals.expect(req, res);
      if (req.url === '/whole') {
        req.resume().on('end', () => {
          arrivals.arrived(req);
          processing = () => res.end('answered');
          requested.shift()?.();
        });
      } else requested.shift()?.();
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const begun = () => new Promise<void>((r) => requested.push(r));

    let started = begun();
    const stalled = fetch(`${url}/stalled`, { method: 'POST', body: new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(new Uint8Array([1])) }), duplex: 'half' } as RequestInit);
    await started;
    started = begun();
    const whole = fetch(`${url}/whole`, { method: 'POST', body: 'whole' });
    await started;

    arrivals.cutArriving();
    await expect(stalled).rejects.toThrow();
    processing!();
    expect(await (await whole).text()).toBe('answered');
  });
});
