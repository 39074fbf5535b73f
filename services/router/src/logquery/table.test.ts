import { describe, expect, it } from 'vitest';
import { lowerLogQuery, lowerMetricQuery, parseLogQL, planLogSelect } from '@floe/query';
import { logsTable } from '@floe/schema';
import { LABELS_TTL_MS, NO_LABELS_TTL_MS, createLogTableCache, mayUseLabelColumn, plannerTableFromColumns } from './table.ts';

const BASE = logsTable.columns.map((c) => c.name);

describe('plannerTableFromColumns', () => {
  it('a view without label columns plans against logsTable itself', () => {
    expect(plannerTableFromColumns(BASE)).toBe(logsTable);
  });

  it('resolves the exact key and its underscore spelling to the label column', () => {
    const t = plannerTableFromColumns([...BASE, 'label_cloud_region', 'label_shard']);
    expect(t.labelColumn!('cloud.region')).toBe('label_cloud_region');
    expect(t.labelColumn!('cloud_region')).toBe('label_cloud_region');
    expect(t.labelColumn!('shard')).toBe('label_shard');
    expect(t.labelColumn!('k8s.pod.name')).toBeUndefined();
    // Spellings the column cannot vouch for fall back to the attribute maps.
    expect(t.labelColumn!('Cloud.Region')).toBeUndefined();
    expect(t.labelColumn!('cloud-region')).toBeUndefined();
  });

  it('colliding keys (a `_2` column) resolve to no column', () => {
    const t = plannerTableFromColumns([...BASE, 'label_x_y', 'label_x_y_2', 'label_a_1']);
    expect(t.labelColumn!('x.y')).toBeUndefined();
    expect(t.labelColumn!('x_y')).toBeUndefined();
    expect(t.labelColumn!('x_y_2')).toBeUndefined();
    // A key that merely ends in a number is its own label.
    expect(t.labelColumn!('a_1')).toBe('label_a_1');
  });

  it('the printed plan reads the label column', () => {
    const t = plannerTableFromColumns([...BASE, 'label_cloud_region']);
    const q = '{cloud_region="eu-west"}';
    const plan = planLogSelect(lowerLogQuery(parseLogQL(q), q, { range: { startNs: 0n, endNs: 10n }, direction: 'backward', limit: 10 }), t, { metadata: false });
    expect(plan.sql).toContain('"label_cloud_region" = $');
    expect(plan.sql).not.toContain('eu-west');
  });
});

describe('createLogTableCache', () => {
  it('asks again soon for a table without labels, rarely for one with labels, never caches a failure', async () => {
    let clock = 0;
    const cache = createLogTableCache(() => clock);
    let calls = 0;
    let columns: string[] = BASE;
    const ask = async () => {
      calls++;
      return columns;
    };
    expect(await cache.get('t', 'd', ask)).toBe(logsTable);
    expect(await cache.get('t', 'd', ask)).toBe(logsTable);
    expect(calls).toBe(1);
    clock += NO_LABELS_TTL_MS;
    columns = [...BASE, 'label_shard'];
    const labelled = await cache.get('t', 'd', ask);
    expect(labelled.labelColumn!('shard')).toBe('label_shard');
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
