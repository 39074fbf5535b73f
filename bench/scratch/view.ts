import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
const entry = readFileSync(process.argv[2]!, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).at(-1);
const files: string[] = entry.fileList[0];
const params: unknown[] = entry.params;
const db = await DuckDBInstance.create(':memory:', { threads: '2' });
const c = await db.connect();
await c.run('SET GLOBAL parquet_metadata_cache = true');
const src = `read_parquet([${files.map((f) => `'${f}'`).join(',')}])`;
await c.run(`CREATE TEMP VIEW metrics AS SELECT * FROM ${src}`);
const inline = (sql: string) => sql.replace(/\$(\d+)/g, (_, n) => { const v = params[Number(n) - 1]; return typeof v === 'string' ? `'${v}'` : String(v); });
async function time(label: string, f: () => Promise<unknown>) {
  const ts: number[] = [];
  for (let i = 0; i < 11; i++) { const t0 = performance.now(); await f(); ts.push(performance.now() - t0); }
  ts.sort((a, b) => a - b);
  console.log(label.padEnd(30), ts[5]!.toFixed(2), 'ms');
}
const sql: string = entry.sql;
const ps = await c.prepare(sql);
for (let round = 0; round < 2; round++) {
  await time('view prepared', async () => { ps.bind(params as never); await ps.runAndReadAll(); });
  await time('view inlined', () => c.runAndReadAll(inline(sql)));
  await time('direct inlined', () => c.runAndReadAll(inline(sql).replace('FROM "metrics"', `FROM ${src}`)));
  await time('view prune-all', () => c.runAndReadAll(`SELECT count(*) FROM metrics WHERE series_id = 'zzzz'`));
  await time('direct prune-all', () => c.runAndReadAll(`SELECT count(*) FROM ${src} WHERE series_id = 'zzzz'`));
}
