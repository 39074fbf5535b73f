import { DuckDBInstance } from '@duckdb/node-api';
import { readdirSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
const SRC = process.argv[2]!;
const OUT = process.argv[3]!;
const RG = Number(process.argv[4] ?? 122880);
const db = await DuckDBInstance.create(':memory:', { threads: '2' });
const c = await db.connect();
rmSync(OUT, { recursive: true, force: true });
const files: string[] = [];
for (const d of readdirSync(SRC)) for (const f of readdirSync(join(SRC, d))) files.push(join(SRC, d, f));
let i = 0;
for (const f of files) {
  mkdirSync(OUT, { recursive: true });
  const sid = `substr(md5(coalesce(point_attr_str['job'], '')), 1, 2) || substr(md5(coalesce(point_attr_str['job'],'') || '\n' || coalesce(point_attr_str['instance'], '')), 1, 2) || substr(series_id, 5)`;
  await c.run(`COPY (SELECT * REPLACE (${sid} AS series_id) FROM read_parquet('${f}') ORDER BY metric_name, series_id, time_unix_nano) TO '${join(OUT, `f${i++}.parquet`)}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${RG})`);
}
console.log('files', files.length);
