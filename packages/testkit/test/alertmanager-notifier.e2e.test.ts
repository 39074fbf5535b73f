import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '@floe/telemetry';
import { AlertmanagerNotifier, type NotifiedAlert } from '@floe/router';
import { freePorts, requireAlertmanager, startAlertmanager, waitFor, type AlertmanagerUnderTest } from '../src/index.ts';

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

/** An HTTP server recording every request's JSON body; `answer` decides the reply (default 200). */
async function recorder(answer?: (req: Received) => Promise<number> | number): Promise<{ url: string; got: Received[]; close(): Promise<void> }> {
  const got: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { path: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') };
      got.push(r);
      void Promise.resolve(answer ? answer(r) : 200).then((status) => res.writeHead(status).end());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    got,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

/** A logger recording warnings and anything at info, to check what the notifier says and doesn't. */
function recordingLog(): { log: Logger; warnings: Record<string, unknown>[]; info: unknown[] } {
  const warnings: Record<string, unknown>[] = [];
  const info: unknown[] = [];
  const log = {
    warn: (obj: Record<string, unknown>) => void warnings.push(obj),
    error: (obj: Record<string, unknown>) => void warnings.push(obj),
    info: (...args: unknown[]) => void info.push(args),
    debug: () => {},
  } as unknown as Logger;
  return { log, warnings, info };
}

const at = (ms: number) => new Date(Math.floor(ms / 1000) * 1000 + 123);

describe('AlertmanagerNotifier against a real Alertmanager', () => {
  let am: AlertmanagerUnderTest;
  let webhook: Awaited<ReturnType<typeof recorder>>;

  beforeAll(async () => {
    webhook = await recorder();
    // Behind a path prefix, as Alertmanagers often are, so the notifier's URL joining is tested too.
    am = await startAlertmanager({ webhookUrl: `${webhook.url}/hook`, pathPrefix: '/am' });
  });
  afterAll(async () => {
    await am?.stop();
    await webhook?.close();
  });

  /** The webhook notifications about `alertname`, oldest first. */
  const notificationsFor = (alertname: string) =>
    webhook.got.map((r) => r.body as { status: string; alerts: Record<string, unknown>[]; commonLabels: Record<string, string> }).filter((b) => b.commonLabels.alertname === alertname);

  it('delivers a firing alert, then its resolution', async () => {
    const { log, warnings, info } = recordingLog();
    const notifier = new AlertmanagerNotifier({ urls: [am.url], log });
    const startsAt = at(Date.now() - 60_000);
    const alert: NotifiedAlert = {
      labels: { alertname: 'HighErrorRate', severity: 'page', service: 'checkout' },
      annotations: { summary: 'checkout errors above 5%' },
      startsAt,
      generatorURL: 'http://floe.example/graph?g0.expr=errors',
    };
    notifier.send('acme', [alert]);

    const listed = await waitFor('the alert in Alertmanager', async () => {
      const alerts = await am.api<Record<string, unknown>[]>('alerts', { filter: 'alertname="HighErrorRate"' });
      return alerts.length > 0 ? alerts : undefined;
    }, 10_000);
    const fingerprint = expect.stringMatching(/^[0-9a-f]{16}$/);
    expect(listed).toEqual([
      {
        labels: alert.labels,
        annotations: alert.annotations,
        startsAt: startsAt.toISOString(),
        // Without an endsAt of ours, Alertmanager ends the alert after its resolve_timeout (5m).
        endsAt: new Date(Date.parse(listed[0]!.updatedAt as string) + 5 * 60_000).toISOString(),
        updatedAt: expect.any(String),
        generatorURL: alert.generatorURL,
        fingerprint,
        receivers: [{ name: 'webhook' }],
        status: { state: 'active', silencedBy: [], inhibitedBy: [] },
      },
    ]);

    const notification = (status: string, alertEndsAt: string) => ({
      version: '4',
      receiver: 'webhook',
      status,
      alerts: [{ status, labels: alert.labels, annotations: alert.annotations, startsAt: startsAt.toISOString(), endsAt: alertEndsAt, generatorURL: alert.generatorURL, fingerprint }],
      groupKey: '{}:{alertname="HighErrorRate"}',
      groupLabels: { alertname: 'HighErrorRate' },
      commonLabels: alert.labels,
      commonAnnotations: alert.annotations,
      externalURL: am.url,
      truncatedAlerts: 0,
    });
    const firing = await waitFor('the firing notification', async () => notificationsFor('HighErrorRate')[0], 10_000);
    expect(webhook.got[0]!.path).toBe('/hook');
    // Go's zero time: a firing alert has no end yet.
    expect(firing).toEqual(notification('firing', '0001-01-01T00:00:00Z'));

    const endsAt = at(Date.now() - 5_000);
    notifier.send('acme', [{ ...alert, endsAt }]);
    const resolved = await waitFor('the resolved notification', async () => notificationsFor('HighErrorRate').find((n) => n.status === 'resolved'), 15_000);
    expect(resolved).toEqual(notification('resolved', endsAt.toISOString()));

    // Alertmanager lists only alerts that have not ended.
    expect(await am.api('alerts', { filter: 'alertname="HighErrorRate"' })).toEqual([]);

    await notifier.stop();
    expect(notifier.stats()).toEqual({ sent: 2, dropped: 0, errors: 0, queued: 0 });
    expect(warnings).toEqual([]);
    expect(info).toEqual([]);
  });

  it('delivers while another configured Alertmanager is unreachable, counting its errors', async () => {
    const { log, warnings } = recordingLog();
    const [closed] = await freePorts(1);
    const deadUrl = `http://127.0.0.1:${closed}`;
    const notifier = new AlertmanagerNotifier({ urls: [deadUrl, am.url], log });
    const alert: NotifiedAlert = { labels: { alertname: 'DiskFull', instance: 'db-1' }, annotations: {}, startsAt: at(Date.now() - 1000), generatorURL: 'http://floe.example/rules' };
    expect(() => notifier.send('acme', [alert])).not.toThrow();

    const listed = await waitFor('the alert in Alertmanager', async () => {
      const alerts = await am.api<{ labels: Record<string, string> }[]>('alerts', { filter: 'alertname="DiskFull"' });
      return alerts.length > 0 ? alerts : undefined;
    }, 10_000);
    expect(listed.map((a) => a.labels)).toEqual([alert.labels]);
    await waitFor('the batch to finish', async () => notifier.stats().sent === 1, 5_000);
    expect(notifier.stats()).toEqual({ sent: 1, dropped: 0, errors: 1, queued: 0 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ url: `${deadUrl}/api/v2/alerts`, tenant: 'acme', alerts: 1 });
    expect((warnings[0]!.err as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    await notifier.stop();
  });

  it('logs a rejected batch with the URL and status, without the alerts, and drops it', async () => {
    const { log, warnings, info } = recordingLog();
    const notifier = new AlertmanagerNotifier({ urls: [am.url], log });
    // Alertmanager refuses the whole batch: an alert without labels is invalid.
    notifier.send('acme', [{ labels: {}, annotations: { secret: 'do-not-log' }, startsAt: new Date(), generatorURL: 'http://floe.example/rules' }]);
    await waitFor('the rejection', async () => notifier.stats().errors === 1, 5_000);
    expect(notifier.stats()).toEqual({ sent: 0, dropped: 1, errors: 1, queued: 0 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ url: `${am.url}/api/v2/alerts`, status: 400, tenant: 'acme', alerts: 1 });
    expect(JSON.stringify(warnings)).not.toContain('do-not-log');
    expect(info).toEqual([]);
    await notifier.stop();
  });
});

describe('AlertmanagerNotifier on the wire', () => {
  it('POSTs per-tenant batches of at most maxBatch to every URL, under its path prefix', async () => {
    const server = await recorder();
    const { log } = recordingLog();
    const notifier = new AlertmanagerNotifier({ urls: [`${server.url}/prefix/`, `${server.url}/other`], maxBatch: 2, log, headers: (t) => ({ Authorization: `Bearer key-of-${t}` }) });
    const startsAt = new Date('2025-03-01T10:00:00.250Z');
    const endsAt = new Date('2025-03-01T10:05:00.000Z');
    const mk = (i: number, extra: Partial<NotifiedAlert> = {}): NotifiedAlert => ({ labels: { alertname: `A${i}` }, annotations: { n: String(i) }, startsAt, generatorURL: `http://floe.example/${i}`, ...extra });
    notifier.send('t1', [mk(1), mk(2, { endsAt })]);
    notifier.send('t2', [mk(3)]);
    notifier.send('t1', [mk(4)]);
    await waitFor('all batches', async () => server.got.length === 6, 5_000);
    await notifier.stop();
    await server.close();

    expect(notifier.stats()).toEqual({ sent: 4, dropped: 0, errors: 0, queued: 0 });
    const wire = (i: number) => ({ labels: { alertname: `A${i}` }, annotations: { n: String(i) }, startsAt: '2025-03-01T10:00:00.250Z', generatorURL: `http://floe.example/${i}` });
    const batches = [
      { tenant: 't1', body: [wire(1), { ...wire(2), endsAt: '2025-03-01T10:05:00.000Z' }] },
      // The oldest queued alert picks the next batch's tenant: t2's A3 waited longer than t1's A4.
      { tenant: 't2', body: [wire(3)] },
      { tenant: 't1', body: [wire(4)] },
    ];
    for (const path of ['/prefix/api/v2/alerts', '/other/api/v2/alerts']) {
      const got = server.got.filter((r) => r.path === path);
      expect(got.map((r) => ({ tenant: r.headers['x-scope-orgid'], body: r.body }))).toEqual(batches);
      for (const r of got) {
        expect(r.headers['content-type']).toBe('application/json');
        expect(r.headers.authorization).toBe(`Bearer key-of-${r.headers['x-scope-orgid']}`);
      }
    }
    expect(Object.keys((server.got[0]!.body as object[])[0]!)).toEqual(['labels', 'annotations', 'startsAt', 'generatorURL']);
  });

  it('drops the oldest alerts when the queue is full, and counts them', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const server = await recorder(async () => {
      await held;
      return 200;
    });
    const { log, warnings } = recordingLog();
    const notifier = new AlertmanagerNotifier({ urls: [server.url], maxQueue: 3, log });
    const mk = (i: number): NotifiedAlert => ({ labels: { alertname: `Q${i}` }, annotations: {}, startsAt: new Date('2025-03-01T10:00:00Z'), generatorURL: 'http://floe.example/' });
    notifier.send('t', [mk(0)]);
    await waitFor('the first batch in flight', async () => server.got.length === 1, 5_000);
    notifier.send('t', [mk(1), mk(2)]);
    notifier.send('t', [mk(3), mk(4), mk(5)]);
    expect(notifier.stats()).toEqual({ sent: 0, dropped: 2, errors: 0, queued: 3 });
    expect(warnings).toEqual([{ dropped: 2, maxQueue: 3 }]);

    release();
    await waitFor('the second batch', async () => notifier.stats().sent === 4, 5_000);
    await notifier.stop();
    await server.close();
    const names = server.got.map((r) => (r.body as { labels: { alertname: string } }[]).map((a) => a.labels.alertname));
    expect(names).toEqual([['Q0'], ['Q3', 'Q4', 'Q5']]);
    expect(notifier.stats()).toEqual({ sent: 4, dropped: 2, errors: 0, queued: 0 });
  });

  it('stop() returns promptly from a hanging Alertmanager, dropping what it could not send', async () => {
    const server = await recorder(() => new Promise<number>(() => {}));
    const { log, warnings } = recordingLog();
    const notifier = new AlertmanagerNotifier({ urls: [server.url], maxBatch: 1, log });
    const mk = (i: number): NotifiedAlert => ({ labels: { alertname: `S${i}` }, annotations: {}, startsAt: new Date(), generatorURL: 'http://floe.example/' });
    notifier.send('t', [mk(1), mk(2), mk(3)]);
    await waitFor('a request in flight', async () => server.got.length === 1, 5_000);

    const t0 = performance.now();
    await notifier.stop();
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(notifier.stats()).toEqual({ sent: 0, dropped: 3, errors: 0, queued: 0 });
    notifier.send('t', [mk(4)]);
    expect(notifier.stats()).toEqual({ sent: 0, dropped: 4, errors: 0, queued: 0 });
    expect(warnings).toEqual([]);
    await server.close();
  });

  it('times a request out after timeoutMs and counts it as an error', async () => {
    const server = await recorder(() => new Promise<number>(() => {}));
    const { log, warnings } = recordingLog();
    const notifier = new AlertmanagerNotifier({ urls: [server.url], timeoutMs: 200, log });
    notifier.send('t', [{ labels: { alertname: 'Slow' }, annotations: {}, startsAt: new Date(), generatorURL: 'http://floe.example/' }]);
    await waitFor('the timeout', async () => notifier.stats().errors === 1, 5_000);
    expect(notifier.stats()).toEqual({ sent: 0, dropped: 1, errors: 1, queued: 0 });
    expect(warnings[0]).toMatchObject({ url: `${server.url}/api/v2/alerts`, tenant: 't', alerts: 1 });
    expect((warnings[0]!.err as Error).name).toBe('TimeoutError');
    await notifier.stop();
    await server.close();
  });
});

describe('startAlertmanager', () => {
  it('names the Debian package when the binary is missing', async () => {
    const saved = process.env.FLOE_TEST_ALERTMANAGER_BIN;
    process.env.FLOE_TEST_ALERTMANAGER_BIN = '/nonexistent/prometheus-alertmanager';
    try {
      const message =
        'no Alertmanager binary at /nonexistent/prometheus-alertmanager: install the Debian package "prometheus-alertmanager" (apt-get install -y prometheus-alertmanager; .ci/run does this), or point FLOE_TEST_ALERTMANAGER_BIN at one';
      expect(() => requireAlertmanager()).toThrow(message);
      await expect(startAlertmanager()).rejects.toThrow(message);
    } finally {
      if (saved === undefined) delete process.env.FLOE_TEST_ALERTMANAGER_BIN;
      else process.env.FLOE_TEST_ALERTMANAGER_BIN = saved;
    }
  });
});
