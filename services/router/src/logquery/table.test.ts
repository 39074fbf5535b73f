import { describe, expect, it } from 'vitest';
import { lowerLogQuery, lowerMetricQuery, parseLogQL, planLogSelect, type PlannerTable } from '@floe/query';
import { logsTable } from '@floe/schema';
import { mayUseLabelColumn } from './table.ts';
import { LABELS_TTL_MS, NO_LABELS_TTL_MS, createTableCache, plannerTableFromColumns, type TableColumn } from '../table-columns.ts';

/** A logs table's definition columns, as floeTableDef gives them: the fixed ones, then label columns with their keys. */
const BASE: TableColumn[] = logsTable.columns;
const label = (column: string, attributeKey: string): TableColumn => ({ name: column, attributeKey });
const columnOf = (t: PlannerTable, labelName: string) => {
  const q = `{service_name="a"} | ${labelName}="v"`;
  const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range: { startNs: 0n, endNs: 10n }, direction: 'backward', limit: 10 }), t, { metadata: false });
  return /AND \("(label_[a-z0-9_]+)" = \$\d+\)/.exec(plan.sql)?.[1];
};

describe('plannerTableFromColumns', () => {
  it('a table without label columns plans against logsTable itself', () => {
    expect(plannerTableFromColumns(logsTable, BASE)).toBe(logsTable);
  });

  it('resolves the exact key and its underscore spelling to the label column', () => {
    const t = plannerTableFromColumns(logsTable, [...BASE, label('label_cloud_region', 'cloud.region'), label('label_shard', 'shard')]);
    expect(columnOf(t, 'cloud.region')).toBe('label_cloud_region');
    expect(columnOf(t, 'cloud_region')).toBe('label_cloud_region');
    expect(columnOf(t, 'shard')).toBe('label_shard');
    expect(columnOf(t, 'k8s.pod.name')).toBeUndefined();
    // Other spellings read the attribute maps by exact key.
    expect(columnOf(t, 'Cloud.Region')).toBeUndefined();
  });

  it('a key with capitals resolves by the key it holds, not by its lower-cased column name', () => {
    const t = plannerTableFromColumns(logsTable, [...BASE, label('label_http_route', 'HTTP.Route'), label('label_env', 'Env')]);
    expect(columnOf(t, 'HTTP.Route')).toBe('label_http_route');
    expect(columnOf(t, 'HTTP_Route')).toBe('label_http_route');
    expect(columnOf(t, 'Env')).toBe('label_env');
    expect(columnOf(t, 'http_route')).toBeUndefined();
    expect(columnOf(t, 'env')).toBeUndefined();
  });

  it('keys that collide on a column name (the later got `_2`) each resolve to their own column', () => {
    const t = plannerTableFromColumns(logsTable, [...BASE, label('label_k8s_pod_name', 'k8s_pod.name'), label('label_k8s_pod_name_2', 'k8s.pod.name'), label('label_a_1', 'a_1')]);
    expect(columnOf(t, 'k8s.pod.name')).toBe('label_k8s_pod_name_2');
    expect(columnOf(t, 'k8s_pod.name')).toBe('label_k8s_pod_name');
    // Their shared underscore spelling names neither key.
    expect(columnOf(t, 'k8s_pod_name')).toBeUndefined();
    expect(columnOf(t, 'k8s_pod_name_2')).toBeUndefined();
    // A key that merely ends in a number is its own label.
    expect(columnOf(t, 'a_1')).toBe('label_a_1');
  });

  it('the printed plan reads the label column, the value as a parameter', () => {
    const t = plannerTableFromColumns(logsTable, [...BASE, label('label_cloud_region', 'cloud.region')]);
    const q = '{cloud_region="eu-west"}';
    const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range: { startNs: 0n, endNs: 10n }, direction: 'backward', limit: 10 }), t, { metadata: false });
    expect(plan.sql).toContain('"label_cloud_region" = $');
    expect(plan.sql).not.toContain('eu-west');
  });
});

describe('createTableCache', () => {
  it('asks again soon for a table without labels, rarely for one with labels, never caches a failure', async () => {
    let clock = 0;
    const cache = createTableCache(logsTable, () => clock);
    let calls = 0;
    let columns: TableColumn[] = BASE;
    const ask = async () => {
      calls++;
      return columns;
    };
    expect(await cache.get('t', 'd', ask)).toBe(logsTable);
    expect(await cache.get('t', 'd', ask)).toBe(logsTable);
    expect(calls).toBe(1);
    clock += NO_LABELS_TTL_MS;
    columns = [...BASE, label('label_shard', 'shard')];
    const labelled = await cache.get('t', 'd', ask);
    expect(columnOf(labelled, 'shard')).toBe('label_shard');
    expect(calls).toBe(2);
    clock += LABELS_TTL_MS - 1;
    expect(await cache.get('t', 'd', ask)).toBe(labelled);
    expect(calls).toBe(2);
    // Another dataset is its own entry; a failing lookup is not kept.
    await expect(cache.get('t', 'other', async () => Promise.reject(new Error('querier down')))).rejects.toThrow('querier down');
    expect(await cache.get('t', 'other', ask)).not.toBe(logsTable);
  });
});

describe('mayUseLabelColumn', () => {
  const lower = (q: string) => lowerLogQuery(parseLogQL(q), q, { range: { startNs: 0n, endNs: 10n }, direction: 'backward', limit: 10 });
  it('only labels without a fixed column need the table', () => {
    expect(mayUseLabelColumn(lower('{service_name="a", level=~"E.*"} |= "x" | trace_id!="" | __error__=""'))).toBe(false);
    expect(mayUseLabelColumn(lower('{service_name="a"} | cloud_region="eu"'))).toBe(true);
    expect(mayUseLabelColumn(lower('{service_name="a"} | json | shard > 2'))).toBe(true);
    expect(mayUseLabelColumn(lowerMetricQuery(parseLogQL('sum by (level) (rate({service_name=~".+"}[1m]))'), ''))).toBe(false);
    expect(mayUseLabelColumn(lowerMetricQuery(parseLogQL('sum by (cloud_region) (rate({service_name=~".+"}[1m]))'), ''))).toBe(true);
    expect(mayUseLabelColumn(lowerMetricQuery(parseLogQL('max_over_time({service_name="a"} | unwrap shard [1m]) by (service_name)'), ''))).toBe(true);
    expect(mayUseLabelColumn([[], ['deployment.environment']])).toBe(true);
    expect(mayUseLabelColumn({ kind: 'label_values', label: 'level', streams: [] })).toBe(false);
  });
});
