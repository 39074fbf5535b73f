import { describe, expect, it } from 'vitest';
import {
  LABEL_FIELD_ID_BASE,
  TABLES,
  attributeMaps,
  attributeTypesSql,
  emptyColumnsDdl,
  fieldIds,
  icebergSchema,
  labelExpr,
  lastColumnId,
  logsTable,
  parquetFieldIds,
  planMaterializedLabels,
  readJsonColumns,
  rowJsonColumns,
  rowJsonSql,
  sanitizeLabelKey,
  selectRewriteColumns,
  selectStoredColumns,
  tracesTable,
  withMaterializedLabels,
  type TableDef,
} from './index.ts';

const tables = Object.entries(TABLES) as Array<[string, TableDef]>;

describe('label column names', () => {
  it.each([
    ['k8s.pod.name', 'k8s_pod_name'],
    ['K8S_POD_NAME', 'k8s_pod_name'],
    ['user.id', 'user_id'],
    ['http.route/v2', 'http_route_v2'],
    ['Ünïcode-κλειδί', '_n_code_______'],
    ['emoji😀key', 'emoji_key'],
    ['already_fine_9', 'already_fine_9'],
  ])('%s sanitises to %s', (key, want) => {
    expect(sanitizeLabelKey(key)).toBe(want);
  });

  it('gives a later key whose name is taken the suffix _2, then _3, in configuration order', () => {
    const labels = planMaterializedLabels(logsTable, ['k8s.pod.name', 'K8S_POD_NAME', 'user.id', 'k8s-pod-name', 'k8s_pod_name_2']);
    expect(labels.map((l) => [l.key, l.column])).toEqual([
      ['k8s.pod.name', 'label_k8s_pod_name'],
      ['K8S_POD_NAME', 'label_k8s_pod_name_2'],
      ['user.id', 'label_user_id'],
      ['k8s-pod-name', 'label_k8s_pod_name_3'],
      // Its own name is taken by the second key's suffixed one.
      ['k8s_pod_name_2', 'label_k8s_pod_name_2_2'],
    ]);
  });

  it('never takes the name of a column the table has', () => {
    const def: TableDef = { ...logsTable, columns: [...logsTable.columns, { name: 'label_user_id', id: 99, type: 'string', doc: 'a column of that name' }] };
    expect(planMaterializedLabels(def, ['user.id']).map((l) => l.column)).toEqual(['label_user_id_2']);
  });

  it('counts a key given twice once, and gives tables without label scopes none', () => {
    expect(planMaterializedLabels(logsTable, ['a', 'a', 'b']).map((l) => l.key)).toEqual(['a', 'b']);
    expect(planMaterializedLabels({ ...logsTable, labelScopes: undefined }, ['a'])).toEqual([]);
    expect(planMaterializedLabels(logsTable, [])).toEqual([]);
  });

  it.each(tables)('%s: fresh field ids above the reserved base and every id of the table', (_name, def) => {
    const labels = planMaterializedLabels(def, ['x', 'y']);
    expect(labels.map((l) => l.id)).toEqual([LABEL_FIELD_ID_BASE + 1, LABEL_FIELD_ID_BASE + 2]);
    // Definitions stay below the base, so a later schema version never reuses a label's id.
    expect(lastColumnId(def)).toBeLessThan(LABEL_FIELD_ID_BASE);
  });
});

describe('a table definition with materialized labels', () => {
  const labels = planMaterializedLabels(logsTable, ['k8s.pod.name', 'K8S_POD_NAME', "it's"]);
  const def = withMaterializedLabels(logsTable, labels);

  it('adds nullable string columns after the signal columns', () => {
    expect(def.columns.slice(0, logsTable.columns.length)).toEqual(logsTable.columns);
    expect(def.columns.slice(logsTable.columns.length).map((c) => [c.name, c.id, c.type, c.required ?? false, c.attributeKey])).toEqual([
      ['label_k8s_pod_name', 10_001, 'string', false, 'k8s.pod.name'],
      ['label_k8s_pod_name_2', 10_002, 'string', false, 'K8S_POD_NAME'],
      ['label_it_s', 10_003, 'string', false, "it's"],
    ]);
    expect(withMaterializedLabels(logsTable, [])).toBe(logsTable);
    const ids = fieldIds(def);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('Iceberg schema and Parquet FIELD_IDS carry the label ids', () => {
    const fields = icebergSchema(def).fields;
    expect(fields.find((f) => f.name === 'label_k8s_pod_name_2')).toMatchObject({ id: 10_002, type: 'string', required: false });
    expect(parquetFieldIds(def)).toContain('"label_k8s_pod_name": 10001');
    expect(parquetFieldIds(def)).toContain('"label_it_s": 10003');
  });

  it('the writer computes them in its SELECT; the acceptor never sends them', () => {
    expect(readJsonColumns(def)).not.toContain('label_');
    expect(readJsonColumns(def)).toBe(readJsonColumns(logsTable));
    expect(rowJsonColumns(def)).toEqual(rowJsonColumns(logsTable));
    expect(rowJsonSql(def)).toBe(rowJsonSql(logsTable));
    const select = selectStoredColumns(def);
    expect(select).toContain(`${labelExpr(logsTable, 'k8s.pod.name')} AS "label_k8s_pod_name"`);
    expect(select.startsWith(selectStoredColumns(logsTable))).toBe(true);
    // Typed like any string column in an empty relation.
    expect(emptyColumnsDdl(def)).toContain('"label_k8s_pod_name_2" VARCHAR');
  });

  it("takes the value from the record's own maps, then the resource's, any type as text; keys are escaped", () => {
    expect(labelExpr(logsTable, 'k8s.pod.name')).toBe(
      'COALESCE("log_attr_str"[\'k8s.pod.name\'], CAST("log_attr_int"[\'k8s.pod.name\'] AS VARCHAR), CAST("log_attr_double"[\'k8s.pod.name\'] AS VARCHAR), CAST("log_attr_bool"[\'k8s.pod.name\'] AS VARCHAR), ' +
        '"resource_attr_str"[\'k8s.pod.name\'], CAST("resource_attr_int"[\'k8s.pod.name\'] AS VARCHAR), CAST("resource_attr_double"[\'k8s.pod.name\'] AS VARCHAR), CAST("resource_attr_bool"[\'k8s.pod.name\'] AS VARCHAR))',
    );
    expect(labelExpr(logsTable, "it's")).toContain(`"log_attr_str"['it''s']`);
    expect(labelExpr(tracesTable, 'user.id')).toMatch(/^COALESCE\("span_attr_str"\['user\.id'\].*"resource_attr_bool"\['user\.id'\] AS VARCHAR\)\)$/);
    expect(labelExpr(TABLES.metrics, 'k')).toMatch(/^COALESCE\("point_attr_str"/);
    expect(labelExpr(TABLES.metric_exemplars, 'k')).toMatch(/^COALESCE\("filtered_attr_str".*"point_attr_str".*"resource_attr_str"/);
    expect(labelExpr(TABLES.profiles, 'k')).toMatch(/^COALESCE\("profile_attr_str"/);
    // Scope attributes describe the instrumentation library, not the record: never a label's source.
    expect(labelExpr(logsTable, 'k')).not.toContain('scope_attr');
  });

  it('a rewrite copies the columns its inputs have, fills labels from the maps where they hold none, and nulls the rest', () => {
    const present = new Set(logsTable.columns.map((c) => c.name));
    const all = selectRewriteColumns(def, new Set([...present, 'label_k8s_pod_name', 'label_k8s_pod_name_2', 'label_it_s']));
    expect(all.startsWith(logsTable.columns.map((c) => `"${c.name}"`).join(', '))).toBe(true);
    expect(all).toContain(`COALESCE("label_it_s", ${labelExpr(logsTable, "it's")}) AS "label_it_s"`);
    const lacking = selectRewriteColumns(def, present);
    expect(lacking).toContain(`, ${labelExpr(logsTable, "it's")} AS "label_it_s"`);
    present.delete('event_name');
    expect(selectRewriteColumns(logsTable, present)).toContain('CAST(NULL AS VARCHAR) AS "event_name"');
  });

  it('is rejected when a label column would collide with a table column', () => {
    expect(() => withMaterializedLabels(logsTable, [{ key: 'x', column: 'body', id: 10_001 }])).toThrow(/collides/);
  });
});

describe('attribute type counting', () => {
  it.each(tables)('%s: every typed map of every scope, with its value type', (_name, def) => {
    const maps = attributeMaps(def);
    expect(maps.length).toBeGreaterThanOrEqual(8);
    for (const m of maps) expect(m.column).toMatch(new RegExp(`_attr_${m.type}$`));
    const sql = attributeTypesSql(def, 'src');
    for (const m of maps) expect(sql).toContain(`SELECT unnest(map_keys("${m.column}")) AS "key", '${m.type}' AS "type" FROM src`);
  });
});
