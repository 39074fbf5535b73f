import { describe, expect, it } from 'vitest';
import {
  TABLES,
  columnNames,
  duckdbType,
  emptyColumnsDdl,
  fieldIds,
  icebergSchema,
  isListType,
  isMapType,
  lastColumnId,
  metricsTable,
  parquetFieldIds,
  partitionSpec,
  readJsonColumns,
  reviveRowJson,
  rowJsonColumns,
  rowJsonSql,
  selectStoredColumns,
  sortOrderJson,
  timeColumn,
  tracesTable,
  type TableDef,
} from './index.ts';

const tables = Object.entries(TABLES) as Array<[string, TableDef]>;

describe('traces table forms', () => {
  it('has unique field ids across columns and map children', () => {
    const ids = [
      ...tracesTable.columns.map((c) => c.id),
      ...Object.values(tracesTable.mapIds).flatMap((m) => [m.keyId, m.valueId]),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    expect(lastColumnId(tracesTable)).toBe(Math.max(...ids));
    expect(fieldIds(tracesTable).sort()).toEqual(ids.sort());
  });

  it('derives an Iceberg schema whose map fields carry key and value ids', () => {
    const s = icebergSchema(tracesTable);
    const attr = s.fields.find((f) => f.name === 'span_attr_int')!;
    expect(attr.type).toMatchObject({ type: 'map', key: 'string', value: 'long' });
    expect(s.fields.find((f) => f.name === 'timestamp')).toMatchObject({ id: 1, type: 'timestamptz', required: true });
  });

  it('partitions by hour of the µs timestamp', () => {
    expect(partitionSpec(tracesTable).fields).toEqual([{ 'source-id': 1, 'field-id': 1000, name: 'timestamp_hour', transform: 'hour' }]);
    expect(timeColumn(tracesTable)).toBe('start_time_unix_nano');
  });

  it('prints FIELD_IDS for COPY with map children', () => {
    expect(parquetFieldIds(tracesTable)).toContain('"span_attr_str": {__duckdb_field_id: 17, key: ');
  });
});

describe.each(tables)('table %s', (name, table) => {
  it('is registered under its own name', () => {
    expect(table.name).toBe(name);
  });

  it('has field ids unique within the table, maps with key/value ids, lists with element ids', () => {
    const ids = fieldIds(table);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => Number.isInteger(id) && id > 0 && id < 1000)).toBe(true); // 1000+ are partition fields
    expect(lastColumnId(table)).toBe(Math.max(...ids));
    const maps = table.columns.filter((c) => isMapType(c.type)).map((c) => c.name);
    expect(Object.keys(table.mapIds).sort()).toEqual([...maps].sort());
    expect(new Set(columnNames(table)).size).toBe(table.columns.length);
    expect(table.columns.every((c) => c.doc.length > 0)).toBe(true);
  });

  it('derives its µs partition timestamp from a required unix-nanosecond column', () => {
    const ts = table.columns.find((c) => c.name === table.partitionSource)!;
    expect(ts).toMatchObject({ type: 'timestamptz', required: true });
    const source = table.columns.find((c) => c.name === timeColumn(table))!;
    expect(source).toMatchObject({ type: 'long', required: true });
    expect(partitionSpec(table).fields).toEqual([{ 'source-id': ts.id, 'field-id': 1000, name: 'timestamp_hour', transform: 'hour' }]);
    expect(selectStoredColumns(table)).toContain(`make_timestamptz("${source.name}" // 1000) AS "timestamp"`);
    // The acceptor never sends the derived column.
    expect(rowJsonColumns(table)).not.toContain('timestamp');
    expect(readJsonColumns(table)).not.toContain('"timestamp"');
  });

  it('sorts by primitive columns, time last', () => {
    expect(table.sortOrder.at(-1)).toBe(timeColumn(table));
    for (const col of table.sortOrder) {
      const c = table.columns.find((x) => x.name === col);
      expect(c, col).toBeDefined();
      expect(typeof c!.type, col).toBe('string');
    }
    expect(sortOrderJson(table).fields.map((f) => f['source-id'])).toEqual(table.sortOrder.map((n) => table.columns.find((c) => c.name === n)!.id));
  });

  it('has one Iceberg field per column and a DuckDB type for each', () => {
    const schema = icebergSchema(table);
    expect(schema.fields.map((f) => f.id)).toEqual(table.columns.map((c) => c.id));
    expect(emptyColumnsDdl(table).split(', "').length).toBeGreaterThanOrEqual(table.columns.length);
    for (const c of table.columns) expect(emptyColumnsDdl(table)).toContain(`"${c.name}" ${duckdbType(c.type)}`);
  });
});

describe('column sets of the signal tables', () => {
  const names = (t: TableDef) => columnNames(t);

  it('logs carry what LogQL resolves to columns, typed maps of three scopes, and the OTLP fields', () => {
    expect(names(TABLES.logs)).toEqual(
      expect.arrayContaining(['service_name', 'severity_text', 'severity_number', 'body', 'trace_id', 'span_id', 'flags', 'time_unix_nano', 'observed_time_unix_nano', 'event_name']),
    );
    for (const scope of ['log', 'resource', 'scope']) {
      for (const [t, v] of [['str', 'string'], ['int', 'long'], ['double', 'double'], ['bool', 'boolean']]) {
        expect(TABLES.logs.columns.find((c) => c.name === `${scope}_attr_${t}`)?.type).toEqual({ map: v });
      }
    }
    expect(TABLES.logs.sortOrder).toEqual(['service_name', 'severity_text', 'time_unix_nano']);
  });

  it('metrics carry every field of every OTLP data point kind', () => {
    expect(names(metricsTable)).toEqual(
      expect.arrayContaining([
        'metric_name', 'metric_type', 'description', 'unit', 'temporality', 'is_monotonic', 'series_id', 'start_unix_nano', 'time_unix_nano',
        'value', 'value_int', 'count', 'sum', 'min', 'max', 'explicit_bounds', 'bucket_counts', 'exp_scale', 'exp_zero_count', 'exp_zero_threshold',
        'exp_positive_offset', 'exp_positive_bucket_counts', 'exp_negative_offset', 'exp_negative_bucket_counts', 'quantiles', 'flags',
        'point_attr_str', 'point_attr_int', 'point_attr_double', 'point_attr_bool', 'resource_attr_str', 'scope_attr_bool',
      ]),
    );
    // The querier reads predicates on start_time_unix_nano as bounds on the row's own time.
    expect(names(metricsTable)).not.toContain('start_time_unix_nano');
    expect(metricsTable.sortOrder).toEqual(['metric_name', 'series_id', 'time_unix_nano']);
  });

  it('metric_exemplars carry the series, the trace link and the filtered attributes', () => {
    expect(names(TABLES.metric_exemplars)).toEqual(
      expect.arrayContaining(['metric_name', 'series_id', 'time_unix_nano', 'value', 'trace_id', 'span_id', 'filtered_attr_str', 'point_attr_str', 'resource_attr_str']),
    );
  });

  it("profiles carry the spec's profile row and what a Pyroscope API needs", () => {
    expect(names(TABLES.profiles)).toEqual(
      expect.arrayContaining([
        'service_name', 'sample_type', 'sample_unit', 'duration_nano', 'trace_id', 'span_id', 'samples_json', 'stacktraces_json', 'timestamp',
        'profile_id', 'profile_type', 'period_type', 'period_unit', 'period', 'total_value', 'profile_attr_str', 'resource_attr_str',
      ]),
    );
  });
});

describe('list columns in every form', () => {
  const col = (n: string) => metricsTable.columns.find((c) => c.name === n)!;

  it('DuckDB types: lists of primitives and of structs', () => {
    expect(duckdbType(col('explicit_bounds').type)).toBe('DOUBLE[]');
    expect(duckdbType(col('bucket_counts').type)).toBe('BIGINT[]');
    expect(duckdbType(col('quantiles').type)).toBe('STRUCT("quantile" DOUBLE, "value" DOUBLE)[]');
    expect(emptyColumnsDdl(metricsTable)).toContain('"quantiles" STRUCT("quantile" DOUBLE, "value" DOUBLE)[]');
    expect(readJsonColumns(metricsTable)).toContain(`"bucket_counts": 'BIGINT[]'`);
    expect(readJsonColumns(metricsTable)).toContain(`"quantiles": 'STRUCT("quantile" DOUBLE, "value" DOUBLE)[]'`);
  });

  it('Iceberg schema: list element ids, struct field ids, optional elements', () => {
    const fields = icebergSchema(metricsTable).fields;
    expect(fields.find((f) => f.name === 'explicit_bounds')!.type).toEqual({ type: 'list', 'element-id': 200, element: 'double', 'element-required': false });
    expect(fields.find((f) => f.name === 'bucket_counts')!.type).toEqual({ type: 'list', 'element-id': 201, element: 'long', 'element-required': false });
    expect(fields.find((f) => f.name === 'quantiles')!.type).toEqual({
      type: 'list',
      'element-id': 204,
      element: {
        type: 'struct',
        fields: [
          { id: 205, name: 'quantile', required: false, type: 'double', doc: 'quantile, 0 to 1' },
          { id: 206, name: 'value', required: false, type: 'double', doc: 'value at the quantile' },
        ],
      },
      'element-required': false,
    });
    expect(lastColumnId(metricsTable)).toBe(206);
  });

  it('Parquet FIELD_IDS: element ids, struct children by name', () => {
    const ids = parquetFieldIds(metricsTable);
    expect(ids).toContain('"explicit_bounds": {__duckdb_field_id: 20, element: 200}');
    expect(ids).toContain('"exp_negative_bucket_counts": {__duckdb_field_id: 28, element: 203}');
    expect(ids).toContain('"quantiles": {__duckdb_field_id: 29, element: {__duckdb_field_id: 204, "quantile": 205, "value": 206}}');
    expect(ids).toContain('"point_attr_str": {__duckdb_field_id: 31, key: 100, value: 101}');
  });

  it('row JSON: 64-bit integers inside lists travel as strings and come back as bigint', () => {
    expect(isListType(col('bucket_counts').type)).toBe(true);
    const sql = rowJsonSql(metricsTable);
    expect(sql).toContain('"bucket_counts"::VARCHAR[]');
    expect(sql).toContain('"explicit_bounds"'); // doubles stay numbers
    expect(sql).not.toContain('"explicit_bounds"::');
    const cols = ['metric_name', 'bucket_counts', 'explicit_bounds', 'value_int'];
    const row = reviveRowJson<Record<string, unknown>>(metricsTable, cols, ['m', ['9007199254740993', '2', null], [0.5, 1], '7']);
    expect(row).toMatchObject({ metric_name: 'm', bucket_counts: [9007199254740993n, 2n, null], explicit_bounds: [0.5, 1], value_int: 7n, quantiles: null });
  });
});
