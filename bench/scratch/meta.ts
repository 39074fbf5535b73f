import { DuckDBInstance } from '@duckdb/node-api';
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const f = process.argv[2]!;
const r = await c.runAndReadAll(`SELECT row_group_id, row_group_num_rows, path_in_schema, encodings, compression, total_compressed_size, stats_min_value, stats_max_value, data_page_offset, dictionary_page_offset, total_uncompressed_size FROM parquet_metadata('${f}') WHERE path_in_schema IN ('series_id','metric_name','value','time_unix_nano') ORDER BY 1`);
for (const row of r.getRows()) console.log(row.map(String).join(' | '));
const k = await c.runAndReadAll(`SELECT created_by, num_rows, num_row_groups FROM parquet_file_metadata('${f}')`);
console.log(k.getRows().map(String));
