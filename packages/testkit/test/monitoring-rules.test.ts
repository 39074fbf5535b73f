import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { PROMETHEUS_BIN } from '../src/index.ts';
import { requireBinary } from '../src/child-server.ts';

/**
 * The monitoring kit under deploy/ (Prometheus alerts and config, the Grafana dashboard and its
 * provisioning) checked by the tools that load it: promtool validates the rules and config and
 * runs the rules' unit tests; the dashboard's queries go through promtool too, as recording rules,
 * so a PromQL typo in a panel fails here rather than as an empty panel.
 */
const root = join(import.meta.dirname, '../../..');
const path = (p: string) => join(root, p);
const read = (p: string) => readFileSync(path(p), 'utf8');

const PROMTOOL = process.env.FLOE_TEST_PROMTOOL_BIN ?? join(dirname(PROMETHEUS_BIN), 'promtool');
const ALERTS = 'deploy/prometheus/floe-alerts.yaml';
const ALERT_TESTS = 'deploy/prometheus/floe-alerts.test.yaml';
const CONFIG = 'deploy/prometheus/prometheus.yaml';
const DASHBOARD = 'deploy/grafana/dashboards/floe-operations.json';
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

function promtool(...args: string[]): { status: number | null; out: string } {
  const r = spawnSync(requireBinary('promtool', PROMTOOL, 'prometheus', 'FLOE_TEST_PROMTOOL_BIN'), args, { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = (parse(read(ALERTS)) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.flatMap((g) => g.rules);

interface Target {
  expr: string;
  refId: string;
  datasource?: unknown;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: unknown;
  targets?: Target[];
}
const dashboard = JSON.parse(read(DASHBOARD)) as {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown; definition?: string; multi?: boolean; includeAll?: boolean; datasource?: unknown }> };
};
const graphs = dashboard.panels.filter((p) => p.type !== 'row');

const scratch = mkdtempSync(join(tmpdir(), 'floe-monitoring-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('Prometheus alerts (deploy/prometheus)', () => {
  it('promtool check rules accepts the alerts without warnings', () => {
    const { status, out } = promtool('check', 'rules', path(ALERTS));
    expect(status, out).toBe(0);
    expect(out).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(out).not.toMatch(/warning/i);
  });

  it('every alert has a for, a severity and a summary and description', () => {
    expect(rules.every((r) => r.alert)).toBe(true);
    for (const r of rules) {
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(['critical', 'warning'], r.alert).toContain(r.labels?.severity);
      expect(Object.keys(r.annotations ?? {}).sort(), r.alert).toEqual(['description', 'summary']);
    }
    // The runbooks name the admin endpoint of the service to look at first.
    const described = (name: string) => rules.filter((r) => r.alert === name).map((r) => r.annotations!.description);
    for (const name of ['FloeWriterBehind', 'FloeWriterRoundsFailing', 'FloeCommitFailedPermanently', 'FloeWalBacklogNearLimit']) for (const d of described(name)) expect(d).toContain(':9092/status');
    for (const name of ['FloeCompactorNotSucceeding', 'FloeCompactionPassesFailing']) for (const d of described(name)) expect(d).toContain(':9093/status');
    // Only target-down selects by job, and by any floe* job name.
    expect(rules.filter((r) => r.expr.includes('job=')).map((r) => [r.alert, r.expr.trim()])).toEqual([['FloeTargetDown', 'up{job=~"floe.*"} == 0']]);
  });

  it('promtool test rules passes, with every alert firing in some case', () => {
    const { status, out } = promtool('test', 'rules', path(ALERT_TESTS));
    expect(status, out).toBe(0);
    expect(out).toContain('SUCCESS');
    const file = parse(read(ALERT_TESTS)) as { tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts?: Array<{ exp_labels: Record<string, string> }> }> }> };
    const fired = new Set(file.tests.flatMap((t) => t.alert_rule_test.flatMap((a) => (a.exp_alerts ?? []).map((e) => `${a.alertname}/${e.exp_labels.severity}`))));
    expect([...fired].sort()).toEqual([...new Set(rules.map((r) => `${r.alert}/${r.labels!.severity}`))].sort());
  });

  it('promtool test rules fails when an expected annotation is wrong', () => {
    // The unit tests compare rendered annotations: a changed description must not pass.
    copyFileSync(path(ALERTS), join(scratch, 'floe-alerts.yaml'));
    const broken = read(ALERT_TESTS).replace('Floe target floe-querier querier:9094 is down', 'Floe target floe-querier querier:9094 is up');
    expect(broken).not.toBe(read(ALERT_TESTS));
    writeFileSync(join(scratch, 'broken.test.yaml'), broken);
    const { status, out } = promtool('test', 'rules', join(scratch, 'broken.test.yaml'));
    expect(status).toBe(1);
    expect(out).toContain('alertname: FloeTargetDown');
  });

  it('promtool check config accepts the example config and the rule file it loads', () => {
    const { status, out } = promtool('check', 'config', path(CONFIG));
    expect(status, out).toBe(0);
    expect(out).toContain('SUCCESS: 1 rule files found');
    expect(out).toContain(`SUCCESS: ${rules.length} rules found`);
  });
});

describe('Grafana dashboard (deploy/grafana)', () => {
  it('is Floe / Operations with the datasource and job variables', () => {
    expect(dashboard.uid).toBe('floe-operations');
    expect(dashboard.title).toBe('Floe / Operations');
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    const vars = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(vars.get('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const job = vars.get('job')!;
    expect(job).toMatchObject({ type: 'query', multi: true, includeAll: true, datasource: DATASOURCE, definition: 'label_values(target_info, job)' });
    expect(job.query).toMatchObject({ query: 'label_values(target_info, job)' });
  });

  it('has unique panel ids, and every panel reads ${datasource} with targets that have an expr and refId', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(graphs.length).toBeGreaterThanOrEqual(20);
    for (const p of dashboard.panels) expect(p.datasource, p.title).toEqual(DATASOURCE);
    for (const p of graphs) {
      expect(['timeseries', 'stat'], p.title).toContain(p.type);
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      const refIds = p.targets!.map((t) => t.refId);
      expect(new Set(refIds).size, p.title).toBe(refIds.length);
      for (const t of p.targets!) {
        expect(t.refId, p.title).toMatch(/^[A-Z]$/);
        expect(t.expr.trim(), p.title).not.toBe('');
        expect(t.expr, p.title).toContain('job=~"$job"');
        if (t.datasource !== undefined) expect(t.datasource, p.title).toEqual(DATASOURCE);
      }
    }
  });

  it('every panel query is valid PromQL', () => {
    // Grafana's variables replaced as it would send them, each query a recording rule for promtool.
    const record = graphs.flatMap((p) => p.targets!.map((t) => ({ record: `dashboard:panel_${p.id}_${t.refId}`, expr: t.expr.replaceAll('$__rate_interval', '1m').replaceAll('$job', 'floe-.*') })));
    const file = join(scratch, 'dashboard-queries.yaml');
    writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules: record }] }));
    const { status, out } = promtool('check', 'rules', file);
    expect(status, out).toBe(0);
    expect(out).toContain(`SUCCESS: ${record.length} rules found`);
  });

  it('is provisioned from where docker-compose mounts it, with the monitoring Prometheus as a data source', () => {
    const provider = parse(read('deploy/grafana/provisioning/dashboards/floe.yaml')) as { apiVersion: number; providers: Array<{ folder: string; type: string; options: { path: string } }> };
    expect(provider.apiVersion).toBe(1);
    expect(provider.providers).toEqual([expect.objectContaining({ folder: 'Floe', type: 'file', options: { path: '/var/lib/grafana/dashboards/floe' } })]);
    const sources = parse(read('deploy/grafana/provisioning/datasources/floe-monitoring.yaml')) as { apiVersion: number; datasources: Array<Record<string, unknown>> };
    expect(sources.apiVersion).toBe(1);
    expect(sources.datasources).toEqual([expect.objectContaining({ name: 'Floe monitoring', type: 'prometheus', uid: 'floe-monitoring', url: 'http://prometheus:9090' })]);
    // Not a uid the tenant data sources of floe.yaml already use.
    const tenantSources = parse(read('deploy/grafana/provisioning/datasources/floe.yaml')) as { datasources: Array<{ uid: string }> };
    expect(tenantSources.datasources.map((d) => d.uid)).not.toContain('floe-monitoring');
  });
});
