import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { PROMETHEUS_BIN, protoTraceExporter, sendSampleTrace, startFloe, startPrometheus, waitFor, type FloeMode, type FloeUnderTest, type PrometheusUnderTest } from '../src/index.ts';
import { requireBinary } from '../src/child-server.ts';

/**
 * Watching Floe from outside (self_monitoring.metrics_endpoint, on by default): every service
 * serves GET /metrics; promtool accepts the text; the counts are what the requests did; and a
 * real Prometheus scrapes all five services, evaluates deploy/prometheus/floe-alerts.yaml
 * without errors and without a false alarm on a healthy Floe, and answers every query of the
 * operations dashboard. In cluster mode each service is its own process with its own metrics.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const ALERTS = join(ROOT, 'deploy/prometheus/floe-alerts.yaml');
const DASHBOARD = join(ROOT, 'deploy/grafana/dashboards/floe-operations.json');
const PROMTOOL = process.env.FLOE_TEST_PROMTOOL_BIN ?? join(dirname(PROMETHEUS_BIN), 'promtool');

/**
 * Families that appear only once what they count has happened (a counter's first increment, an
 * observation of a limited tenant, a ruler or compaction failure): the dashboard and alerts may
 * name them although a quiet Floe does not serve them yet.
 */
const EVENT_ONLY = new Set([
  'items_refused_total',
  'inflight_limit_refusals_total',
  'query_wait_duration_seconds_bucket',
  'resends_dropped_total',
  'active_series',
  'active_series_limit',
  'commit_failures_total',
  'groups_deferred_total',
  'entries_deferred_by_budget_total',
  'attribute_type_mismatches_total',
  'tables_provisioned_total',
  'table_provisioning_failures_total',
  'rule_evaluations_total',
  'rule_evaluation_failures_total',
  'rule_group_duration_seconds_bucket',
  'rule_group_duration_seconds_count',
  'rule_group_duration_seconds_sum',
  'ruler_notifications_sent_total',
  'ruler_notifications_dropped_total',
  'ruler_notification_errors_total',
]);

/**
 * A materialized label (schema.materialized_labels) the DuckDB gauges' test sends as a double:
 * the writer's own encoder leaves a flush holding one to DuckDB (sorted-batch-parquet.ts), so the
 * writer's DuckDB instance exists afterwards.
 */
const DOUBLE_LABEL = 'sample.ratio';

/** Metric names of the vector selectors of a PromQL expression. */
function metricNames(expr: string): string[] {
  const names: string[] = [];
  parser.parse(expr).iterate({
    enter: (n) => {
      if (n.name !== 'VectorSelector') return;
      const id = n.node.getChild('Identifier');
      if (id) names.push(expr.slice(id.from, id.to));
    },
  });
  return names;
}

interface Dashboard {
  panels: { title: string; type: string; targets?: { expr: string }[] }[];
}
const dashboardExprs = () =>
  (JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard).panels.flatMap((p) => (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr.replaceAll('$job', '.*').replaceAll('$__rate_interval', '1m').replaceAll('$__range', '5m') })));
const alertRules = () =>
  (parseYaml(readFileSync(ALERTS, 'utf8')) as { groups: { rules: { alert?: string; expr: string }[] }[] }).groups.flatMap((g) => g.rules);

/** Sample lines of one family in a text: labels → value. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[4]);
  }
  return undefined;
}

describe.each<FloeMode>(['embedded', 'cluster'])('GET /metrics (%s)', (mode) => {
  let floe: FloeUnderTest;
  let prom: PrometheusUnderTest | undefined;
  let urls: Record<string, string>;
  const tenant = 'watched';
  let traceId: string;
  let key: string;

  beforeAll(async () => {
    // A label column for the DuckDB gauges' test; files mergeable as soon as committed.
    floe = await startFloe({ mode, config: { schema: { materialized_labels: [DOUBLE_LABEL] }, compactor: { min_file_age: '0s' } } });
    urls = { router: floe.routerUrl, acceptor: floe.otlpHttpUrl, writer: floe.writerAdminUrl, querier: floe.querierAdminUrl, compactor: floe.compactorAdminUrl };
    key = (await floe.bootstrap(tenant)).api_key;
    const auth = { authorization: `Bearer ${key}`, 'x-tenant-id': tenant };
    // Three spans, one export each (SimpleSpanProcessor); one body that is not protobuf.
    traceId = (await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'shop')).traceId;
    const bad = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-protobuf' }, body: new Uint8Array([0xff, 0xff, 0xff]) });
    expect(bad.status).toBe(400);
    // The spans may be committed in different rounds: wait for all three (a Flight DoGet each).
    await waitFor(
      'the three spans',
      async () => {
        const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT count(*) AS n FROM traces'), metadata: auth, deadlineMs: 20_000 });
        return Number(table.toArray()[0]!.n) === 3 ? true : undefined;
      },
      60_000,
      300,
    );
    expect((await fetch(`${floe.routerUrl}/tracequery/api/traces/${traceId}`, { headers: auth })).status).toBe(200);
  }, 180_000);
  afterAll(async () => {
    await prom?.stop();
    await floe?.stop();
  });

  const metricsOf = async (service: string) => {
    const res = await fetch(`${urls[service]}/metrics`);
    expect(res.status, service).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    return res.text();
  };

  it('serves each service\'s metrics in a text that promtool accepts, with the process it describes in target_info', async () => {
    const promtool = requireBinary('promtool', PROMTOOL, 'prometheus', 'FLOE_TEST_PROMTOOL_BIN');
    for (const service of Object.keys(urls)) {
      const text = await metricsOf(service);
      const check = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
      expect(check.status, `${service}: ${check.stdout}${check.stderr}`).toBe(0);
      expect(sample(text, 'target_info', { service_namespace: 'floe', service_name: mode === 'embedded' ? 'floe' : service }), service).toBe(1);
      expect(sample(text, 'process_uptime_seconds'), service).toBeGreaterThan(0);
      expect(sample(text, 'process_cpu_time_seconds_total', { cpu_mode: 'user' }), service).toBeGreaterThan(0);
    }
  });

  it('counts what the requests did: spans accepted, the refused body, the routes and the Flight call', async () => {
    const acceptor = await metricsOf('acceptor');
    expect(sample(acceptor, 'items_accepted_total', { tenant_id: tenant, dataset_id: 'default', signal: 'traces' })).toBe(3);
    expect(sample(acceptor, 'requests_refused_total', { tenant_id: tenant, signal: 'traces', reason: 'bad_data' })).toBe(1);
    expect(sample(acceptor, 'http_server_request_duration_seconds_count', { http_route: '/v1/traces', http_request_method: 'POST', http_response_status_code: '200' })).toBe(3);
    expect(sample(acceptor, 'http_server_request_duration_seconds_count', { http_route: '/v1/traces', http_response_status_code: '400' })).toBe(1);
    expect(sample(acceptor, 'http_server_request_duration_seconds_bucket', { http_route: '/v1/traces', http_response_status_code: '200', le: '+Inf' })).toBe(3);

    const router = await metricsOf('router');
    expect(sample(router, 'http_server_request_duration_seconds_count', { http_route: '/tracequery/api/traces/:trace_id', http_response_status_code: '200' })).toBeGreaterThanOrEqual(1);

    const querier = await metricsOf('querier');
    expect(sample(querier, 'rpc_server_call_duration_seconds_count', { rpc_service: 'arrow.flight.protocol.FlightService', rpc_method: 'DoGet', rpc_grpc_status_code: '0' })).toBeGreaterThanOrEqual(1);
    // The file cache holds copies of the object store's files: on S3 (cluster) the query downloaded
    // the traces file into it; a local directory's files are read where they are.
    expect(sample(querier, 'file_cache_max_bytes')).toBe(10 * 1024 ** 3);
    if (mode === 'cluster') {
      expect(sample(querier, 'file_cache_downloads_total')).toBeGreaterThanOrEqual(1);
      expect(sample(querier, 'file_cache_bytes')).toBeGreaterThan(0);
    } else expect(sample(querier, 'file_cache_downloads_total')).toBe(0);

    const writer = await metricsOf('writer');
    expect(sample(writer, 'commit_duration_seconds_count', { table: 'traces' })).toBeGreaterThanOrEqual(1);
    expect(sample(writer, 'wal_oldest_segment_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(writer, 'writer_round_failures')).toBe(0);
    // One writer and one compactor: each alone in its group.
    expect(sample(writer, 'group_members', { group: 'writer' })).toBe(1);
    expect(sample(await metricsOf('compactor'), 'group_members', { group: 'compactor' })).toBe(1);

    const compactor = await waitFor('a compaction pass', async () => {
      const text = await metricsOf('compactor');
      return sample(text, 'compaction_last_success_timestamp_seconds') === undefined ? undefined : text;
    }, 30_000, 500);
    expect(sample(compactor, 'compaction_pass_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThanOrEqual(1);

    // Body bytes of acknowledged requests, as sent: one logs export of a known size adds exactly its bytes.
    const logsBytes = async () => sample(await metricsOf('acceptor'), 'request_bytes_accepted_total', { tenant_id: tenant, dataset_id: 'default', signal: 'logs' }) ?? 0;
    const before = await logsBytes();
    const body = JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'counted' } }] }] }] });
    const sent = await fetch(`${floe.otlpHttpUrl}/v1/logs`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json' } });
    expect(sent.status).toBe(200);
    expect((await logsBytes()) - before).toBe(Buffer.byteLength(body));
    expect(sample(compactor, 'compaction_last_success_timestamp_seconds')! * 1000).toBeLessThanOrEqual(Date.now());
  });

  it('is scraped by a real Prometheus that evaluates every alert rule without error or false alarm and answers every dashboard query', async () => {
    prom = await startPrometheus({
      scrapeSelf: false,
      ruleFiles: [ALERTS],
      scrapeJobs: Object.entries(urls).map(([service, url]) => ({ job: `floe-${service}`, targets: [new URL(url).host] })),
    });
    const p = prom;
    await waitFor(
      'every floe job up',
      async () => {
        const up = (await p.api<{ result: { metric: { job: string }; value: [number, string] }[] }>('query', { query: 'up' })).result;
        return up.length === 5 && up.every((s) => s.value[1] === '1') ? up : undefined;
      },
      30_000,
      500,
    );
    type Rule = { name: string; health: string; lastError?: string; evaluationTime: number; lastEvaluation: string };
    const rules = await waitFor(
      'every rule evaluated',
      async () => {
        const data = await p.api<{ groups: { rules: Rule[] }[] }>('rules');
        const all = data.groups.flatMap((g) => g.rules);
        return all.length > 0 && all.every((r) => !r.lastEvaluation.startsWith('0001')) ? all : undefined;
      },
      30_000,
      500,
    );
    expect(rules.length).toBe(alertRules().length);
    for (const r of rules) expect({ rule: r.name, health: r.health, error: r.lastError ?? '' }).toEqual({ rule: r.name, health: 'ok', error: '' });
    // A few scrapes in: a healthy Floe raises nothing (pending or firing).
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const alerts = await p.api<{ alerts: { labels: { alertname: string }; state: string }[] }>('alerts');
    expect(alerts.alerts.map((a) => `${a.labels.alertname} ${a.state}`)).toEqual([]);

    const served = new Set(await p.api<string[]>('label/__name__/values'));
    const named = new Set([...dashboardExprs().flatMap((q) => metricNames(q.expr)), ...alertRules().flatMap((r) => metricNames(r.expr))]);
    const unknown = [...named].filter((n) => !served.has(n) && !EVENT_ONLY.has(n) && n !== 'up');
    expect(unknown).toEqual([]);

    for (const q of dashboardExprs()) {
      const res = await fetch(`${p.url}/api/v1/query?${new URLSearchParams({ query: q.expr })}`);
      const body = (await res.json()) as { status: string; error?: string };
      expect({ panel: q.title, status: body.status, error: body.error ?? '' }).toEqual({ panel: q.title, status: 'success', error: '' });
    }
    // The ingest panel shows the spans this test sent.
    const accepted = (await p.api<{ result: { metric: { signal: string }; value: [number, string] }[] }>('query', { query: `sum by (signal) (items_accepted_total{tenant_id="${tenant}"})` })).result;
    expect(accepted.map((s) => [s.metric.signal, Number(s.value[1])])).toContainEqual(['traces', mode === 'embedded' ? 3 * 5 : 3]);
  });

  it('reports the memory each DuckDB instance holds: a finite count of bytes, the querier\'s cache above 0, nothing held by the write side between statements', async () => {
    const duckdb = async (component: string) => {
      const text = await metricsOf(component);
      return { memory: sample(text, 'duckdb_memory_bytes', { component }), spilled: sample(text, 'duckdb_temporary_storage_bytes', { component }) };
    };
    // Two logs of an hour that has closed, each committed before the next is sent: two files that a
    // pass sort-merges with DuckDB. Each holds the label as a double, which the writer leaves to DuckDB.
    const auth = { authorization: `Bearer ${key}`, 'x-tenant-id': tenant };
    const closedHourNs = (BigInt(Date.now()) - 2n * 3_600_000n) * 1_000_000n;
    const committed = async () => {
      const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n FROM logs WHERE service_name = 'duckdb-memory'`), metadata: auth, deadlineMs: 20_000 });
      return Number(table.toArray()[0]!.n);
    };
    for (const [i, ratio] of [0.25, 0.5].entries()) {
      const record = { timeUnixNano: String(closedHourNs + BigInt(i)), body: { stringValue: `ratio ${ratio}` }, attributes: [{ key: DOUBLE_LABEL, value: { doubleValue: ratio } }] };
      const body = JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'duckdb-memory' } }] }, scopeLogs: [{ logRecords: [record] }] }] });
      const sent = await fetch(`${floe.otlpHttpUrl}/v1/logs`, { method: 'POST', body, headers: { ...auth, 'content-type': 'application/json' } });
      expect(sent.status).toBe(200);
      await waitFor(`log ${i + 1} committed`, async () => ((await committed()) === i + 1 ? true : undefined), 60_000, 200);
    }

    // A pass on demand, through the router as an operator asks for one.
    const admin = { authorization: `Bearer ${floe.adminApiKey}` };
    const started = await fetch(`${floe.routerUrl}/api/v1/ops/compact`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ tenant, table: 'logs' }) });
    expect(started.status).toBe(202);
    const { id } = (await started.json()) as { id: string };
    type Status = { requests: Array<{ id: string; finishedAt: string | null; result: { failed: boolean } | null }> };
    const pass = await waitFor('the on-demand pass', async () => {
      const status = (await (await fetch(`${floe.routerUrl}/api/v1/ops/compact/status`, { headers: admin })).json()) as Status;
      return status.requests.find((r) => r.id === id && r.finishedAt !== null);
    }, 60_000, 200);
    expect(pass.result).toMatchObject({ failed: false });

    // Each process reports its own instance (all three in embedded mode), as a count of bytes: a
    // finite number, never negative, spilled bytes too.
    for (const component of ['writer', 'compactor', 'querier']) {
      const { memory, spilled } = await duckdb(component);
      for (const [gauge, value] of [['duckdb_memory_bytes', memory], ['duckdb_temporary_storage_bytes', spilled]] as const) {
        expect(Number.isFinite(value), `${component} ${gauge}: ${value}`).toBe(true);
        expect(value, `${component} ${gauge}`).toBeGreaterThanOrEqual(0);
      }
    }
    // All three have worked: the writer wrote the flushes holding a double label, the compactor
    // sort-merged the closed hour's two files, the querier's shared instance answered the queries
    // above. The querier keeps what it read (Parquet metadata and file bytes, within
    // querier.memory_limit), so it holds memory from then on; the writer's and the compactor's
    // instances read each file once and cache nothing (ParquetWriter turns DuckDB's file cache
    // off), so between their statements they hold nothing. A scrape reports the last reading when
    // a new one takes long, so each is read until it has caught up.
    await waitFor(`querier's duckdb_memory_bytes above 0`, async () => (((await duckdb('querier')).memory ?? 0) > 0 ? true : undefined), 10_000, 200);
    for (const component of ['writer', 'compactor']) {
      await waitFor(`${component}'s duckdb_memory_bytes back at 0`, async () => ((await duckdb(component)).memory === 0 ? true : undefined), 10_000, 200);
    }
  });
});
