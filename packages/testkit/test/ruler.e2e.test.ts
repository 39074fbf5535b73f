import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, startAlertmanager, startFloe, waitFor, type AlertmanagerUnderTest, type FloeUnderTest } from '../src/index.ts';

/**
 * The ruler end to end, in both modes: a rule group set through the Mimir ruler config API,
 * evaluated by the router every second over remote-written samples (the cluster's router holds
 * the ruler lease in PostgreSQL and writes through the acceptor process with the internal key); its recording rule's results
 * and the ALERTS series read back with PromQL, the alert's life (pending, firing, resolved) in
 * /api/v1/rules and /api/v1/alerts, and the alert delivered to a real Alertmanager, whose
 * webhook sees it fire and resolve. Another tenant sees none of it.
 */

const GROUP = `name: worker
interval: 1s
rules:
  - record: job:queue_depth:max
    expr: max by (job) (queue_depth)
    labels:
      source: ruler
  - alert: QueueBacklog
    expr: queue_depth > 100
    for: 2s
    labels:
      severity: page
    annotations:
      summary: "queue {{ $labels.instance }} holds {{ $value }} jobs"
`;

interface WebhookCall {
  status: string;
  alerts: Array<{ status: string; labels: Record<string, string>; annotations: Record<string, string> }>;
}

describe.each(['embedded', 'cluster'] as const)('ruler (%s): recording and alerting rules of a tenant, evaluated and notified', (mode) => {
  let floe: FloeUnderTest;
  let am: AlertmanagerUnderTest;
  let hook: Server;
  const calls: WebhookCall[] = [];
  let acme: { key: string; tenant: string };
  let other: { key: string; tenant: string };

  const write = async (as: { key: string; tenant: string }, instance: string, value: number) => {
    const timeseries = [{ labels: [{ name: '__name__', value: 'queue_depth' }, { name: 'instance', value: instance }, { name: 'job', value: 'worker' }], samples: [{ value, timestamp: BigInt(Date.now()) }] }];
    const body = compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries })));
    const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body, headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${as.key}`, 'x-tenant-id': as.tenant } });
    expect(res.status).toBe(204);
  };
  const api = async (as: { key: string; tenant: string }, method: string, path: string, body?: string, contentType = 'application/yaml') => {
    const res = await fetch(`${floe.routerUrl}/metricquery${path}`, {
      method,
      headers: { authorization: `Bearer ${as.key}`, 'x-tenant-id': as.tenant, ...(body !== undefined ? { 'content-type': contentType } : {}) },
      ...(body !== undefined ? { body } : {}),
    });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type') ?? '', text, json: () => JSON.parse(text) as Record<string, any> };
  };
  const instant = async (as: { key: string; tenant: string }, query: string) => {
    const r = await api(as, 'GET', `/api/v1/query?query=${encodeURIComponent(query)}`);
    expect(r.status).toBe(200);
    return r.json().data.result as Array<{ metric: Record<string, string>; value: [number, string] }>;
  };

  beforeAll(async () => {
    hook = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        calls.push(JSON.parse(text) as WebhookCall);
        res.end();
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    am = await startAlertmanager({ webhookUrl: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook` });
    floe = await startFloe({
      mode,
      config: { ruler: { evaluation_interval: '1s', poll_interval: '200ms', resend_delay: '1s', alertmanager_urls: [am.url], external_labels: { cluster: 'test' } } },
    });
    acme = { key: (await floe.bootstrap('acme')).api_key, tenant: 'acme' };
    other = { key: (await floe.bootstrap('other')).api_key, tenant: 'other' };
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
    await am?.stop();
    await new Promise((r) => hook?.close(r));
  });

  it('stores a rule group through the Mimir and Cortex config API paths and answers it as YAML', async () => {
    expect((await api(acme, 'GET', '/config/v1/rules')).status).toBe(404);
    const set = await api(acme, 'POST', '/config/v1/rules/team-a', GROUP);
    expect(set.status).toBe(202);
    expect(set.json()).toEqual({ status: 'success', data: null, errorType: '', error: '' });
    const one = await api(acme, 'GET', '/config/v1/rules/team-a/worker');
    expect(one.status).toBe(200);
    expect(one.type).toContain('application/yaml');
    expect(one.text).toContain('name: worker');
    expect(one.text).toContain('record: job:queue_depth:max');
    expect(one.text).toContain('for: 2s');
    const all = await api(acme, 'GET', '/rules');
    expect(all.status).toBe(200);
    expect(all.text).toMatch(/^team-a:\n/);
    expect(all.text).toContain('alert: QueueBacklog');
  });

  it('refuses bad rule groups with the error envelope, and writes from a key without tenant:manage', async () => {
    const broken = await api(acme, 'POST', '/config/v1/rules/team-a', 'name: x\nrules:\n  - record: ok_name\n    expr: sum(\n');
    expect(broken.status).toBe(400);
    expect(broken.json()).toMatchObject({ status: 'error', errorType: 'bad_data' });
    expect(broken.json().error).toContain('could not parse expression');
    expect((await api(acme, 'POST', '/config/v1/rules/team-a', 'name: [unclosed')).status).toBe(400);
    expect((await api(acme, 'POST', '/config/v1/rules/team-a', 'name: x\nrules:\n  - alert: A\n    expr: up\n    annotations:\n      s: "{{ .Broken "\n')).status).toBe(400);
    const created = await fetch(`${floe.routerUrl}/api/v1/tenants/acme/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ scopes: ['query'] }),
    });
    const reader = { key: ((await created.json()) as { secret: string }).secret, tenant: 'acme' };
    expect((await api(reader, 'POST', '/config/v1/rules/team-a', GROUP)).status).toBe(403);
    expect((await api(reader, 'DELETE', '/config/v1/rules/team-a/worker')).status).toBe(403);
    expect((await api(reader, 'GET', '/config/v1/rules/team-a/worker')).status).toBe(200);
    expect((await api({ key: 'floe_bad', tenant: 'acme' }, 'GET', '/config/v1/rules')).status).toBe(401);
  });

  it('holds a tenant to its own ruler limits (limits.ruler_*, overridden in its settings)', async () => {
    const capped = { key: (await floe.bootstrap('capped')).api_key, tenant: 'capped' };
    const patched = await fetch(`${floe.routerUrl}/api/v1/tenants/capped`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ settings: { limits: { ruler_max_rule_groups_per_tenant: 1, ruler_max_rules_per_rule_group: 1 } } }),
    });
    expect(patched.status).toBe(200);
    const two = await api(capped, 'POST', '/config/v1/rules/ns', GROUP);
    expect(two.status).toBe(400);
    expect(two.json().error).toContain('limits.ruler_max_rules_per_rule_group');
    const one = (name: string) => `name: ${name}\nrules:\n  - record: a:b\n    expr: up\n`;
    expect((await api(capped, 'POST', '/config/v1/rules/ns', one('first'))).status).toBe(202);
    expect((await api(capped, 'POST', '/config/v1/rules/ns', one('first'))).status).toBe(202);
    const second = await api(capped, 'POST', '/config/v1/rules/ns', one('second'));
    expect(second.status).toBe(400);
    expect(second.json().error).toContain('limits.ruler_max_rule_groups_per_tenant');
  });

  it('records the rule’s result and fires the alert after `for`, into Floe and the Alertmanager', async () => {
    await write(acme, 'a', 150);
    await write(acme, 'b', 20);
    const recorded = await waitFor('the recording rule’s result', async () => {
      const r = await instant(acme, 'job:queue_depth:max');
      return r.length === 1 && r[0]!.value[1] === '150' ? r : undefined;
    }, 60_000, 250);
    expect(recorded[0]!.metric).toEqual({ __name__: 'job:queue_depth:max', job: 'worker', source: 'ruler' });

    const firing = await waitFor('the alert to fire', async () => {
      const alerts = (await api(acme, 'GET', '/api/v1/alerts')).json().data.alerts as Array<Record<string, any>>;
      return alerts.length === 1 && alerts[0]!.state === 'firing' ? alerts : undefined;
    }, 60_000, 250);
    expect(firing[0]).toMatchObject({
      labels: { alertname: 'QueueBacklog', instance: 'a', job: 'worker', severity: 'page' },
      annotations: { summary: 'queue a holds 150 jobs' },
      state: 'firing',
      value: '1.5e+02',
    });

    const rules = (await api(acme, 'GET', '/api/v1/rules')).json().data.groups as Array<Record<string, any>>;
    expect(rules).toHaveLength(1);
    expect(rules[0]).toMatchObject({ name: 'worker', file: 'team-a', interval: 1 });
    expect(rules[0]!.rules.map((r: Record<string, unknown>) => [r.name, r.type, r.health])).toEqual([
      ['job:queue_depth:max', 'recording', 'ok'],
      ['QueueBacklog', 'alerting', 'ok'],
    ]);
    expect(rules[0]!.rules[1]).toMatchObject({ state: 'firing', duration: 2, query: 'queue_depth > 100', labels: { severity: 'page' } });
    const onlyAlerts = (await api(acme, 'GET', '/api/v1/rules?type=alert&exclude_alerts=true')).json().data.groups;
    expect(onlyAlerts[0].rules.map((r: Record<string, unknown>) => r.name)).toEqual(['QueueBacklog']);
    expect(onlyAlerts[0].rules[0].alerts).toBeUndefined();

    const alertsSeries = await waitFor('the ALERTS series', async () => {
      const r = await instant(acme, 'ALERTS{alertname="QueueBacklog", alertstate="firing"}');
      return r.length === 1 ? r : undefined;
    }, 30_000, 250);
    expect(alertsSeries[0]!.metric).toEqual({ __name__: 'ALERTS', alertname: 'QueueBacklog', alertstate: 'firing', instance: 'a', job: 'worker', severity: 'page' });

    const inAm = await waitFor('the alert in the Alertmanager', async () => {
      const list = await am.api<Array<{ labels: Record<string, string>; annotations: Record<string, string>; status: { state: string } }>>('/alerts');
      return list.length === 1 ? list : undefined;
    }, 30_000, 250);
    expect(inAm[0]!.labels).toEqual({ alertname: 'QueueBacklog', cluster: 'test', instance: 'a', job: 'worker', severity: 'page' });
    expect(inAm[0]!.annotations).toEqual({ summary: 'queue a holds 150 jobs' });
    expect(inAm[0]!.status.state).toBe('active');
    await waitFor('the webhook’s firing notification', async () => calls.find((c) => c.status === 'firing'), 30_000, 250);
  });

  it('resolves the alert when the condition clears, and the Alertmanager tells the webhook', async () => {
    await write(acme, 'a', 10);
    await waitFor('the alert to resolve', async () => ((await api(acme, 'GET', '/api/v1/alerts')).json().data.alerts.length === 0 ? true : undefined), 60_000, 250);
    const resolved = await waitFor('the webhook’s resolved notification', async () => calls.find((c) => c.status === 'resolved'), 60_000, 250);
    expect(resolved.alerts[0]).toMatchObject({ status: 'resolved', labels: { alertname: 'QueueBacklog', instance: 'a', cluster: 'test' } });
  });

  it('shows another tenant none of it', async () => {
    expect((await api(other, 'GET', '/config/v1/rules')).status).toBe(404);
    expect((await api(other, 'GET', '/config/v1/rules/team-a/worker')).status).toBe(404);
    expect((await api(other, 'DELETE', '/config/v1/rules/team-a/worker')).status).toBe(404);
    expect((await api(other, 'GET', '/api/v1/rules')).json().data.groups).toEqual([]);
    expect((await api(other, 'GET', '/api/v1/alerts')).json().data.alerts).toEqual([]);
    expect(await instant(other, 'job:queue_depth:max')).toEqual([]);
    expect(await instant(other, 'ALERTS')).toEqual([]);
  });

  it('evaluates LogQL rules set through Loki’s ruler API: results into metrics, alerts from log lines', async () => {
    const logGroup = `name: checkout-logs
interval: 1s
rules:
  - record: service:log_lines:count1m
    expr: sum by (service_name) (count_over_time({service_name="checkout"}[1m]))
  - alert: CheckoutErrors
    expr: sum by (service_name) (count_over_time({service_name="checkout"} |= "error" [1m])) > 2
    annotations:
      summary: "{{ $labels.service_name }} logged {{ $value }} errors"
`;
    const set = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/rules/logs-ns`, { method: 'POST', headers: { authorization: `Bearer ${acme.key}`, 'x-tenant-id': 'acme', 'content-type': 'application/yaml' }, body: logGroup });
    expect(set.status).toBe(202);
    const legacy = await fetch(`${floe.routerUrl}/logquery/api/prom/rules/logs-ns/checkout-logs`, { headers: { authorization: `Bearer ${acme.key}`, 'x-tenant-id': 'acme' } });
    expect(legacy.status).toBe(200);
    expect(await legacy.text()).toContain('alert: CheckoutErrors');
    // A log query is no rule: Loki refuses it too.
    const logQuery = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/rules/logs-ns`, { method: 'POST', headers: { authorization: `Bearer ${acme.key}`, 'x-tenant-id': 'acme', 'content-type': 'application/yaml' }, body: 'name: bad\nrules:\n  - alert: A\n    expr: \'{service_name="checkout"}\'\n' });
    expect(logQuery.status).toBe(400);

    const now = BigInt(Date.now()) * 1_000_000n;
    const lines = ['ok', 'error: card declined', 'error: timeout', 'error: timeout', 'ok'].map((line, i) => [String(now + BigInt(i) * 1000n), line]);
    const pushed = await fetch(`${floe.otlpHttpUrl}/loki/api/v1/push`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.key}`, 'x-tenant-id': 'acme', 'content-type': 'application/json' },
      body: JSON.stringify({ streams: [{ stream: { service_name: 'checkout' }, values: lines }] }),
    });
    expect(pushed.status).toBe(204);

    const recorded = await waitFor('the LogQL recording rule’s result', async () => {
      const r = await instant(acme, 'service:log_lines:count1m');
      return r.length === 1 && r[0]!.value[1] === '5' ? r : undefined;
    }, 60_000, 250);
    expect(recorded[0]!.metric).toEqual({ __name__: 'service:log_lines:count1m', service_name: 'checkout' });
    const firing = await waitFor('the LogQL alert to fire', async () => {
      const res = await fetch(`${floe.routerUrl}/logquery/prometheus/api/v1/alerts`, { headers: { authorization: `Bearer ${acme.key}`, 'x-tenant-id': 'acme' } });
      const alerts = ((await res.json()) as { data: { alerts: Array<Record<string, any>> } }).data.alerts;
      return alerts.length === 1 && alerts[0]!.state === 'firing' ? alerts : undefined;
    }, 60_000, 250);
    expect(firing[0]).toMatchObject({ labels: { alertname: 'CheckoutErrors', service_name: 'checkout' }, annotations: { summary: 'checkout logged 3 errors' } });
    // The Prometheus rules list of the metrics API holds only PromQL groups; Loki's lists the LogQL ones.
    const lokiRules = await fetch(`${floe.routerUrl}/logquery/prometheus/api/v1/rules`, { headers: { authorization: `Bearer ${acme.key}`, 'x-tenant-id': 'acme' } });
    expect(((await lokiRules.json()) as { data: { groups: Array<{ name: string }> } }).data.groups.map((g) => g.name)).toEqual(['checkout-logs']);
    expect((await fetch(`${floe.routerUrl}/logquery/loki/api/v1/rules/logs-ns`, { method: 'DELETE', headers: { authorization: `Bearer ${acme.key}`, 'x-tenant-id': 'acme' } })).status).toBe(202);
  });

  it('lets a rule and its templates’ queries read what an earlier rule of its group wrote at the same evaluation, as Prometheus does', async () => {
    const chain = { key: (await floe.bootstrap('chain')).api_key, tenant: 'chain' };
    const sample = [{ labels: [{ name: '__name__', value: 'chain_depth' }, { name: 'job', value: 'worker' }], samples: [{ value: 150, timestamp: BigInt(Date.now()) }] }];
    const body = compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries: sample })));
    expect((await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body, headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${chain.key}`, 'x-tenant-id': chain.tenant } })).status).toBe(204);
    await waitFor('the raw sample', async () => ((await instant(chain, 'chain_depth')).length === 1 ? true : undefined), 60_000, 250);
    // Every evaluation of this group reads chain_depth; its alert reads only the recorded series.
    const group = 'name: chained\ninterval: 5s\nrules:\n  - record: chain:depth:max\n    expr: max by (job) (chain_depth)\n  - alert: ChainDeep\n    expr: chain:depth:max > 100\n    annotations:\n      summary: \'{{ query "sum(chain_depth)" | first | value }} queued by {{ query "chain:depth:max" | first | label "job" }}\'\n';
    expect((await api(chain, 'POST', '/config/v1/rules/ns', group)).status).toBe(202);
    const firing = await waitFor('the chained alert', async () => {
      const alerts = (await api(chain, 'GET', '/api/v1/alerts')).json().data.alerts as Array<{ state: string; activeAt: string; annotations: Record<string, string> }>;
      return alerts.length === 1 && alerts[0]!.state === 'firing' ? alerts[0]! : undefined;
    }, 60_000, 250);
    // The recorded series' first sample is the group's first evaluation: the alert went active
    // at that same evaluation, not at the next one (when storage would first have had the value).
    const recorded = await waitFor('the recorded samples', async () => {
      const r = await api(chain, 'GET', `/api/v1/query?query=${encodeURIComponent('chain:depth:max[5m]')}`);
      const series = r.json().data.result as Array<{ values: Array<[number, string]> }>;
      return series.length === 1 ? series[0]!.values : undefined;
    }, 30_000, 250);
    expect(Date.parse(firing.activeAt)).toBe(recorded[0]![0] * 1000);
    // Its annotation's template queries ran at that evaluation too, the recorded series included.
    expect(firing.annotations).toEqual({ summary: '150 queued by worker' });
    expect(recorded[0]![1]).toBe('150');
    expect((await api(chain, 'DELETE', '/config/v1/rules/ns')).status).toBe(202);
  });

  it('deletes a group and a namespace', async () => {
    expect((await api(acme, 'POST', '/config/v1/rules/team-b', GROUP.replace('name: worker', 'name: second'))).status).toBe(202);
    expect((await api(acme, 'DELETE', '/config/v1/rules/team-a/worker')).status).toBe(202);
    expect((await api(acme, 'GET', '/config/v1/rules/team-a/worker')).status).toBe(404);
    expect((await api(acme, 'DELETE', '/config/v1/rules/team-b')).status).toBe(202);
    expect((await api(acme, 'GET', '/config/v1/rules')).status).toBe(404);
    expect((await api(acme, 'GET', '/api/v1/rules')).json().data.groups).toEqual([]);
  });
});
