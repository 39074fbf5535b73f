import { DuckDBInstance } from '@duckdb/node-api';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
const db = await DuckDBInstance.create(':memory:', { threads: '2' });
const c = await db.connect();
await c.run('SET GLOBAL parquet_metadata_cache = true');
function list(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) { const p = join(dir, e); if (statSync(p).isDirectory()) out.push(...list(p)); else if (p.endsWith('.parquet')) out.push(p); }
  return out;
}
async function time(label: string, sql: string) {
  const ts: number[] = [];
  let rows = 0;
  for (let i = 0; i < 7; i++) { const t0 = performance.now(); const r = await c.runAndReadAll(sql); rows = r.currentRowCount; ts.push(performance.now() - t0); }
  ts.sort((a, b) => a - b);
  console.log(label.padEnd(40), ts[3]!.toFixed(1), 'ms', rows, 'rows');
}
for (const dir of process.argv.slice(2)) {
  const files = list(dir);
  const src = `read_parquet([${files.map((f) => `'${f}'`).join(',')}])`;
  const where = `metric_name = 'http_requests_total' AND point_attr_str['instance'] = '10.2.0.1:8080' AND point_attr_str['method'] <> 'DELETE'`;
  const ids = (await c.runAndReadAll(`SELECT DISTINCT series_id FROM ${src} WHERE ${where} ORDER BY 1`)).getRows().map((r) => String(r[0]));
  const inl = `series_id IN (${ids.map((i) => `'${i}'`).join(',')})`;
  const pts = (extra: string) => `SELECT series_id, list(CAST(time_unix_nano // 1000000 AS DOUBLE)) t, list(value) v FROM ${src} WHERE metric_name='http_requests_total' AND ${inl}${extra} GROUP BY series_id ORDER BY 1`;
  console.log(dir, files.length, 'files', ids[0], ids.at(-1));
  await time('IN only', pts(''));
  await time('IN + BETWEEN', pts(` AND series_id BETWEEN '${ids[0]}' AND '${ids.at(-1)}'`));
  const job = `SELECT DISTINCT series_id FROM ${src} WHERE metric_name='request_duration_seconds_bucket' AND point_attr_str['job']='checkout'`;
  const jids = (await c.runAndReadAll(job)).getRows().map((r) => String(r[0])).sort();
  const jin = `series_id IN (${jids.map((i) => `'${i}'`).join(',')})`;
  await time('job IN', `SELECT series_id, list(value) FROM ${src} WHERE metric_name='request_duration_seconds_bucket' AND ${jin} GROUP BY 1`);
  await time('job IN+BETWEEN', `SELECT series_id, list(value) FROM ${src} WHERE metric_name='request_duration_seconds_bucket' AND ${jin} AND series_id BETWEEN '${jids[0]}' AND '${jids.at(-1)}' GROUP BY 1`);
}
for (const dir of process.argv.slice(2)) {
  const files = list(dir);
  const src = `read_parquet([${files.map((f) => `'${f}'`).join(',')}])`;
  await time(`${dir} full`, `SELECT series_id, list(CAST(time_unix_nano // 1000000 AS DOUBLE)) t, list(value) v FROM ${src} WHERE metric_name='http_requests_total' GROUP BY series_id`);
  await time(`${dir} mem`, `SELECT series_id, list(CAST(time_unix_nano // 1000000 AS DOUBLE)) t, list(value) v FROM ${src} WHERE metric_name='process_resident_memory_bytes' GROUP BY series_id`);
}
