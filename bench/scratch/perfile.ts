import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
const entry = readFileSync(process.argv[2]!, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).at(-1);
const files: string[] = entry.fileList[0];
const db = await DuckDBInstance.create(':memory:', { threads: process.env.T ?? '2' });
const c = await db.connect();
for (const s of (process.env.SETS ?? 'SET GLOBAL parquet_metadata_cache = true').split(';')) if (s.trim()) await c.run(s);
async function time(label: string, sql: string) {
  const ts: number[] = [];
  for (let i = 0; i < 9; i++) { const t0 = performance.now(); await c.runAndReadAll(sql); ts.push(performance.now() - t0); }
  ts.sort((a, b) => a - b);
  console.log(label.padEnd(30), ts[4]!.toFixed(2), 'ms');
}
for (const n of [1, 10, 42]) {
  const src = `read_parquet([${files.slice(0, n).map((f) => `'${f}'`).join(',')}])`;
  await time(`${n} files prune-all`, `SELECT count(*) FROM ${src} WHERE series_id = 'zzzz'`);
  await time(`${n} files count`, `SELECT count(*) FROM ${src}`);
}
