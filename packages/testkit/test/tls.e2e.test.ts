import { readFileSync, writeFileSync } from 'node:fs';
import { connect as connectHttp2 } from 'node:http2';
import { join } from 'node:path';
import { connect, rootCertificates, type PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { TempoSearchRequestSchema, TempoStreamingQuerier, create, grpcServiceDefinition, type TempoSearchResponse } from '@floe/proto';
import {
  grpcTraceExporter,
  hostPort,
  makeTestAuthority,
  protoTraceExporter,
  runFloeCli,
  sendSampleTrace,
  startFloe,
  traceReadBack,
  waitFor,
  type FloeMode,
  type FloeUnderTest,
  type TestAuthority,
} from '../src/index.ts';

/** The certificate a new TLS connection to `url` is shown, verified against `ca`, or the error. */
function handshake(url: string, ca: Buffer | readonly string[], alpn?: string[]): Promise<{ cert: PeerCertificate; protocol: string | false } | { error: string }> {
  const { host, port } = hostPort(url);
  return new Promise((resolve) => {
    const socket = connect({ host, port, ca: ca as Buffer, ...(alpn ? { ALPNProtocols: alpn } : {}) }, () => {
      resolve({ cert: socket.getPeerCertificate(), protocol: socket.alpnProtocol ?? false });
      socket.end();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
  });
}

const hexSerial = (s: string) => s.toUpperCase().replace(/^0+/, '');
const serialOf = (r: Awaited<ReturnType<typeof handshake>>) => ('cert' in r ? hexSerial(r.cert.serialNumber) : r.error);

/**
 * Config `tls`: every public port of Floe serves TLS with the configured certificate, real
 * clients that trust its authority (OTLP exporters over gRPC and HTTP, Flight, Grafana's Tempo
 * streaming over HTTP/2) work end to end, clients that do not are refused, and a renewed
 * certificate is served without a restart. Cluster mode also runs router → querier over
 * grpc+tls, verified against tls.ca_file.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('TLS on the public ports (%s)', (mode) => {
  let ca: TestAuthority;
  let floe: FloeUnderTest;
  let key: string;
  let firstSerial: string;
  const tenant = 'tls-co';

  beforeAll(async () => {
    ca = makeTestAuthority();
    const leaf = ca.issue('server', ['localhost', '127.0.0.1']);
    firstSerial = hexSerial(leaf.serial);
    floe = await startFloe({
      mode,
      config: {
        tls: { cert_file: leaf.certFile, key_file: leaf.keyFile, ca_file: ca.caFile, reload_interval: '1s' },
        // floe all's own telemetry goes to its acceptor through the loopback port.
        ...(mode === 'embedded' ? { self_monitoring: { enabled: true, export_interval: '300ms' } } : {}),
      },
    });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const auth = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });

  it('serves the configured certificate on every public port and refuses clients that do not trust it', async () => {
    expect(floe.routerUrl).toMatch(/^https:/);
    expect(floe.otlpHttpUrl).toMatch(/^https:/);
    expect(floe.flightAddress).toMatch(/^grpc\+tls:/);
    for (const url of [floe.routerUrl, floe.otlpHttpUrl, floe.otlpGrpcAddress, floe.flightAddress]) {
      const ok = await handshake(url, ca.caPem);
      expect(serialOf(ok), url).toBe(firstSerial);
      // Only the public authorities: the certificate cannot be verified (the server may send its
      // authority along, OpenSSL completing the chain from the process's trust store).
      const refused = await handshake(url, rootCertificates);
      expect(refused, url).toEqual({ error: expect.stringMatching(/^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)$/) });
    }
    // Cleartext HTTP to a TLS port gets no HTTP answer, and the port keeps serving TLS.
    await expect(fetch(floe.otlpHttpUrl.replace('https:', 'http:') + '/ready')).rejects.toThrow();
    expect((await fetch(`${floe.otlpHttpUrl}/ready`)).status).toBe(200);
    // The admin ports stay cleartext, for probes and scrapes inside the cluster.
    expect((await fetch(`${floe.writerAdminUrl}/ready`)).status).toBe(200);
  });

  it.each([
    ['otlp-grpc', () => grpcTraceExporter(floe.otlpGrpcAddress, { apiKey: key, tenant }, ca.caPem)],
    ['otlp-proto', () => protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant })],
  ])('a trace exported with %s over TLS comes back over HTTPS and over Flight with TLS', async (name, makeExporter) => {
    const sent = await sendSampleTrace(makeExporter(), `tls-${name}`);
    expect(await traceReadBack(floe, sent.traceId, auth())).toEqual({ router: 3, flight: 3 });
  });

  it('answers `floe sql` over grpc+tls when the CLI trusts the authority (NODE_EXTRA_CA_CERTS)', async () => {
    const sql = `SELECT count(*) > 0 AS any FROM traces`;
    // By name: TLS names no server by IP address (RFC 6066), and Node warns when asked to.
    const url = floe.flightAddress.replace('127.0.0.1', 'localhost');
    const trusted = await runFloeCli(['sql', '--json', '--url', url, sql], { FLOE_API_KEY: key, FLOE_TENANT: tenant, NODE_EXTRA_CA_CERTS: ca.caFile });
    expect(trusted.stderr).toBe('');
    expect(JSON.parse(trusted.stdout)).toEqual([{ any: true }]);
    const untrusted = await runFloeCli(['sql', '--json', '--url', url, sql], { FLOE_API_KEY: key, FLOE_TENANT: tenant });
    expect(untrusted.code).not.toBe(0);
  });

  it('offers HTTP/2 on the OTLP/HTTP port by ALPN (as Go exporters choose it), beside HTTP/1.1', async () => {
    expect(await handshake(floe.otlpHttpUrl, ca.caPem, ['h2', 'http/1.1'])).toMatchObject({ protocol: 'h2' });
    expect(await handshake(floe.otlpHttpUrl, ca.caPem, ['http/1.1'])).toMatchObject({ protocol: 'http/1.1' });
    const session = connectHttp2(floe.otlpHttpUrl, { ca: ca.caPem });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = session.request({ ':method': 'POST', ':path': '/v1/traces', 'content-type': 'application/json', ...auth() });
        let answer = 0;
        req.on('response', (h) => (answer = Number(h[':status'])));
        // The answer read to its end, so the stream (and the session's close) completes.
        req.on('data', () => {});
        req.on('end', () => resolve(answer));
        req.on('error', reject);
        req.end('{"resourceSpans":[]}');
      });
      expect(status).toBe(200);
    } finally {
      session.close();
    }
  });

  it("serves Grafana's streaming search as gRPC over TLS on the router's port (ALPN h2) beside HTTPS", async () => {
    expect(await handshake(floe.routerUrl, ca.caPem, ['h2', 'http/1.1'])).toMatchObject({ protocol: 'h2' });
    expect(await handshake(floe.routerUrl, ca.caPem, ['http/1.1'])).toMatchObject({ protocol: 'http/1.1' });
    // A client that takes h2 for the HTTP API (Grafana's Go client, curl) reaches the same routes.
    const session = connectHttp2(floe.routerUrl, { ca: ca.caPem });
    try {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = session.request({ ':path': `/tracequery/api/search?q=${encodeURIComponent('{}')}&limit=1`, ...auth() });
        let status = 0;
        let body = '';
        req.on('response', (h) => (status = Number(h[':status'])));
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => resolve({ status, body }));
        req.on('error', reject);
        req.end();
      });
      expect(answer.status).toBe(200);
      expect((JSON.parse(answer.body) as { traces: unknown[] }).traces).toHaveLength(1);
    } finally {
      session.close();
    }
    const { host, port } = hostPort(floe.routerUrl);
    const Client = grpc.makeGenericClientConstructor(grpcServiceDefinition(TempoStreamingQuerier), 'StreamingQuerier');
    const client = new Client(`${host}:${port}`, grpc.credentials.createSsl(ca.caPem)) as grpc.Client & Record<string, (req: unknown, md: grpc.Metadata) => grpc.ClientReadableStream<TempoSearchResponse>>;
    try {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(auth())) md.set(k, v);
      const now = Math.floor(Date.now() / 1000);
      const answers = await new Promise<TempoSearchResponse[]>((resolve, reject) => {
        const out: TempoSearchResponse[] = [];
        const call = client.Search!(create(TempoSearchRequestSchema, { Query: '{ resource.service.name = "tls-otlp-proto" }', start: now - 3600, end: now + 60, Limit: 5 }), md);
        call.on('data', (m: TempoSearchResponse) => out.push(m));
        call.on('error', reject);
        call.on('end', () => resolve(out));
      });
      expect(answers.flatMap((a) => a.traces.map((t) => t.rootServiceName))).toContain('tls-otlp-proto');
    } finally {
      client.close();
    }
  });

  if (mode === 'embedded') {
    it("lets this process's own clients reach it on cleartext loopback ports (floe admin bootstrap and self-monitoring beside floe all)", async () => {
      const asSystem = { authorization: `Bearer ${floe.adminApiKey}`, 'x-tenant-id': '_system', 'x-dataset-id': '_monitoring' };
      await waitFor('router spans in _system', async () => {
        const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n FROM _system._monitoring.traces WHERE name LIKE 'GET /tracequery%'`), metadata: asSystem, deadlineMs: 20_000 });
        return Number(table.getChildAt(0)!.get(0)) > 0 || undefined;
      }, 30_000, 300);
      // The CLI trusts nothing here: it reaches the router through the loopback port the lock names.
      const env = { FLOE__META__DATA_DIR: join(floe.dataDir, 'meta'), FLOE__STORAGE__ROOT: join(floe.dataDir, 'data'), FLOE__LOG__LEVEL: 'warn' };
      const lock = JSON.parse(readFileSync(`${join(floe.dataDir, 'meta')}.lock.json`, 'utf8')) as { routerUrl: string };
      expect(lock.routerUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(lock.routerUrl).not.toBe(floe.routerUrl.replace('https:', 'http:'));
      const r = await runFloeCli(['admin', 'bootstrap', '--tenant', 'tls-newco', '--json'], env);
      expect(r.stderr).toBe('');
      const out = JSON.parse(r.stdout) as { tenant: string; api_key: string };
      expect(out.tenant).toBe('tls-newco');
      const res = await fetch(`${floe.routerUrl}/tracequery/api/search?q=${encodeURIComponent('{}')}`, { headers: { authorization: `Bearer ${out.api_key}`, 'x-tenant-id': 'tls-newco' } });
      expect(res.status).toBe(200);
    });
  }

  it('serves a renewed certificate to new connections without a restart', async () => {
    // A rotation caught half-written (a certificate file that is not one) is not taken up: the
    // last good certificate stays served.
    const served = readFileSync(join(ca.dir, 'server.pem'));
    writeFileSync(join(ca.dir, 'server.pem'), '-----BEGIN CERTIFICATE-----\ntruncated');
    await new Promise((r) => setTimeout(r, 2500));
    for (const url of [floe.routerUrl, floe.otlpGrpcAddress]) expect(serialOf(await handshake(url, ca.caPem)), url).toBe(firstSerial);
    expect((await fetch(`${floe.otlpHttpUrl}/ready`)).status).toBe(200);
    writeFileSync(join(ca.dir, 'server.pem'), served);

    const renewed = ca.issue('server', ['localhost', '127.0.0.1']);
    const renewedSerial = hexSerial(renewed.serial);
    expect(renewedSerial).not.toBe(firstSerial);
    for (const url of [floe.routerUrl, floe.otlpHttpUrl, floe.otlpGrpcAddress, floe.flightAddress]) {
      await waitFor(`${url} serving the renewed certificate`, async () => (serialOf(await handshake(url, ca.caPem)) === renewedSerial ? true : undefined), 15_000, 200);
    }
    // Requests keep working on the renewed certificate, router → querier included.
    const res = await fetch(`${floe.routerUrl}/tracequery/api/search?q=${encodeURIComponent('{}')}&limit=1`, { headers: auth() });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { traces: unknown[] }).traces.length).toBe(1);
  });
});

/**
 * Config `tls.admin_ports`: the writer's, querier's and compactor's admin ports serve the process's
 * certificate too (probes, /status, /metrics and the compactor's actions over HTTPS), ask for no
 * client certificate, and the router still drives the compactor: over HTTPS in a cluster, over
 * the cleartext loopback port inside `floe all`.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('TLS on the admin ports (%s)', (mode) => {
  let ca: TestAuthority;
  let floe: FloeUnderTest;
  let serial: string;

  beforeAll(async () => {
    ca = makeTestAuthority();
    const leaf = ca.issue('server', ['localhost', '127.0.0.1']);
    serial = hexSerial(leaf.serial);
    floe = await startFloe({ mode, config: { tls: { cert_file: leaf.certFile, key_file: leaf.keyFile, ca_file: ca.caFile, admin_ports: true }, compactor: { interval: '1h', open_hour_interval: '0s' } } });
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('serves the certificate on every admin port, without asking for a client certificate, and nothing in clear', async () => {
    for (const url of [floe.writerAdminUrl, floe.querierAdminUrl, floe.compactorAdminUrl]) {
      expect(url).toMatch(/^https:/);
      expect(serialOf(await handshake(url, ca.caPem)), url).toBe(serial);
      expect((await fetch(`${url}/ready`)).status, url).toBe(200);
      await expect(fetch(`${url.replace('https:', 'http:')}/ready`), url).rejects.toThrow();
    }
    expect(await (await fetch(`${floe.writerAdminUrl}/status`)).json()).toMatchObject({ backlog: { segments: expect.any(Number) } });
  });

  it("the router runs the compactor's actions through it (its key over TLS)", async () => {
    const res = await fetch(`${floe.routerUrl}/api/v1/ops/compact/status`, { headers: { authorization: `Bearer ${floe.adminApiKey}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ enabled: true });
    // Straight to the compactor without its key: refused, over TLS as in clear.
    expect((await fetch(`${floe.compactorAdminUrl}/compact`, { method: 'POST' })).status).toBe(401);
  });
});
