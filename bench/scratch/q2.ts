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
  for (let i = 0; i < 5; i++) { const t0 = performance.now(); await c.runAndReadAll(sql); ts.push(performance.now() - t0); }
  ts.sort((a, b) => a - b);
  console.log(label.padEnd(50), ts[2]!.toFixed(1), 'ms');
}
const qs: Record<string, string> = JSON.parse(process.env.QS!);
for (const dir of process.argv.slice(2)) {
  const files = list(dir);
  const src = `read_parquet([${files.map((f) => `'${f}'`).join(',')}])`;
  for (const [k, q] of Object.entries(qs)) await time(`${dir.slice(-12)} ${k}`, q.replaceAll('SRC', src));
}
