import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
const [sqlFile] = process.argv.slice(2);
const entry = readFileSync(sqlFile!, 'utf8').trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).at(-1);
const db = await DuckDBInstance.create(':memory:', { threads: '2' });
const c = await db.connect();
await c.run('SET GLOBAL parquet_metadata_cache = true');
const files: string[] = entry.fileList[0];
await c.run(`CREATE VIEW metrics AS SELECT * FROM read_parquet([${files.map((f: string) => `'${f}'`).join(',')}])`);
const params: unknown[] = entry.params;
const inline = (sql: string) => sql.replace(/\$(\d+)/g, (_, n) => { const v = params[Number(n) - 1]; return typeof v === 'string' ? `'${v}'` : String(v); });
async function time(label: string, sql: string, withParams: boolean) {
  const ts: number[] = [];
  let rows = 0;
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    const r = withParams ? await c.runAndReadAll(sql, params as never) : await c.runAndReadAll(sql);
    rows = r.currentRowCount;
    ts.push(performance.now() - t0);
  }
  ts.sort((a, b) => a - b);
  console.log(label.padEnd(30), ts[3]!.toFixed(1), 'ms', rows, 'rows');
}
const sql: string = entry.sql;
console.log(files.length, 'files');
await time('params', sql, true);
await time('inlined', inline(sql), false);
const variants: Record<string, (s: string) => string> = JSON.parse(process.env.VARIANTS ?? '{}');
for (const [k, v] of Object.entries(variants)) {
  const [from, to] = v as unknown as [string, string];
  await time(k, inline(sql).replace(new RegExp(from, 's'), to), false);
}
