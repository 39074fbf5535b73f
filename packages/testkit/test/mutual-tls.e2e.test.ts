import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { grpcTraceExporter, hostPort, makeTestAuthority, runFloeCli, sendSampleTrace, startFloe, traceReadBack, waitFor, type FloeMode, type FloeUnderTest, type TestAuthority } from '../src/index.ts';

interface Identity {
  cert: Buffer;
  key: Buffer;
}

/** GET `path` on a fresh connection trusting `ca` and presenting `identity` (if any): the status, or the error's code. */
function httpsGet(url: string, path: string, ca: Buffer, identity?: Identity): Promise<number | string> {
  const { host, port } = hostPort(url);
  return new Promise((resolve) => {
    const req = request({ host, port, path, ca, ...identity, agent: false, timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}

/** Whether a gRPC channel to `address` (trusting `ca`, presenting `identity`) becomes ready within 3 s. */
function grpcConnects(address: string, ca: Buffer, identity?: Identity): Promise<boolean> {
  const { host, port } = hostPort(address);
  const client = new grpc.Client(`${host}:${port}`, grpc.credentials.createSsl(ca, identity?.key ?? null, identity?.cert ?? null));
  return new Promise<boolean>((resolve) => client.waitForReady(Date.now() + 3000, (err) => resolve(err === undefined || err === null))).finally(() => client.close());
}

const pair = (files: { certFile: string; keyFile: string }): Identity => ({ cert: readFileSync(files.certFile), key: readFileSync(files.keyFile) });

/**
 * Config `tls.client_ca_file`: every public TLS port demands a client certificate its
 * authorities signed (Loki's RequireAndVerifyClientCert). A collector with one sends; clients
 * without one, or with one from another authority, are refused on every port; Floe's own calls
 * to those ports (cluster: the router's to the querier over grpc+tls, the services'
 * self-monitoring exports to the acceptor over https) present the process's certificate.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('mutual TLS on the public ports (%s)', (mode) => {
  let ca: TestAuthority;
  let floe: FloeUnderTest;
  let key: string;
  let collector: Identity;
  let collectorFiles: { certFile: string; keyFile: string };
  let outsider: Identity;
  const tenant = 'mtls-co';

  beforeAll(async () => {
    ca = makeTestAuthority();
    const leaf = ca.issue('server', ['localhost', '127.0.0.1'], { clientAuth: true });
    collectorFiles = ca.issue('collector', ['collector.example'], { clientAuth: true });
    collector = pair(collectorFiles);
    outsider = pair(makeTestAuthority().issue('outsider', ['outsider.example'], { clientAuth: true }));
    floe = await startFloe({
      mode,
      config: {
        tls: { cert_file: leaf.certFile, key_file: leaf.keyFile, ca_file: ca.caFile, client_ca_file: ca.caFile, reload_interval: '1s' },
        ...(mode === 'cluster' ? { self_monitoring: { enabled: true, export_interval: '300ms' } } : {}),
      },
    });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const auth = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });

  it('refuses clients without a certificate its client authorities signed, on every public port', async () => {
    for (const url of [floe.routerUrl, floe.otlpHttpUrl]) {
      expect(await httpsGet(url, '/ready', ca.caPem, collector), url).toBe(200);
      expect(await httpsGet(url, '/ready', ca.caPem), url).toEqual(expect.any(String));
      expect(await httpsGet(url, '/ready', ca.caPem, outsider), url).toEqual(expect.any(String));
    }
    for (const address of [floe.otlpGrpcAddress, floe.flightAddress]) {
      expect(await grpcConnects(address, ca.caPem, collector), address).toBe(true);
      expect(await grpcConnects(address, ca.caPem), address).toBe(false);
      expect(await grpcConnects(address, ca.caPem, outsider), address).toBe(false);
    }
    // The admin ports stay cleartext, for probes and scrapes inside the cluster.
    expect((await fetch(`${floe.writerAdminUrl}/ready`)).status).toBe(200);
  });

  it('takes a trace from a collector with its certificate and gives it back through the router and over Flight', async () => {
    const sent = await sendSampleTrace(grpcTraceExporter(floe.otlpGrpcAddress, { apiKey: key, tenant }, ca.caPem, collector), 'mtls-collector');
    // This process presents tls.cert_file as Floe's own do (testkit); in cluster mode the router
    // reads from the querier over grpc+tls presenting its own.
    expect(await traceReadBack(floe, sent.traceId, auth())).toEqual({ router: 3, flight: 3 });
  });

  it('answers `floe sql` when the CLI presents a client certificate (FLOE_CLIENT_CERT_FILE, FLOE_CLIENT_KEY_FILE)', async () => {
    const sql = `SELECT count(*) > 0 AS any FROM traces`;
    const url = floe.flightAddress.replace('127.0.0.1', 'localhost');
    const env = { FLOE_API_KEY: key, FLOE_TENANT: tenant, NODE_EXTRA_CA_CERTS: ca.caFile };
    const presented = await runFloeCli(['sql', '--json', '--url', url, sql], { ...env, FLOE_CLIENT_CERT_FILE: collectorFiles.certFile, FLOE_CLIENT_KEY_FILE: collectorFiles.keyFile });
    expect(presented.stderr).toBe('');
    expect(JSON.parse(presented.stdout)).toEqual([{ any: true }]);
    const bare = await runFloeCli(['sql', '--json', '--url', url, sql], env);
    expect(bare.code).not.toBe(0);
    expect(bare.stderr).toMatch(/No connection established/);
    const half = await runFloeCli(['sql', '--json', '--url', url, sql], { ...env, FLOE_CLIENT_CERT_FILE: collectorFiles.certFile });
    expect(half.code).toBe(2);
    expect(half.stderr).toMatch(/FLOE_CLIENT_CERT_FILE and FLOE_CLIENT_KEY_FILE: set both, or neither/);
  });

  if (mode === 'cluster') {
    it("has the services' own telemetry reach the acceptor over mutual TLS (the writer's self-monitoring)", async () => {
      const asSystem = { authorization: `Bearer ${floe.adminApiKey}`, 'x-tenant-id': '_system', 'x-dataset-id': '_monitoring' };
      await waitFor('the writer\'s commit_duration in _system', async () => {
        const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n FROM _system._monitoring.metrics WHERE metric_name = 'commit_duration' AND count > 0`), metadata: asSystem, deadlineMs: 20_000 });
        return Number(table.getChildAt(0)!.get(0)) > 0 || undefined;
      }, 45_000, 500);
    });
  }
});
