import { DuckDBInstance } from '@duckdb/node-api';
const f1 = process.argv[2]!;
const times: Record<string, number[]> = {};
const mark = (k: string, t: number) => { (times[k] ??= []).push(performance.now() - t); };
for (let i = 0; i < 30; i++) {
  let t = performance.now();
  const inst = await DuckDBInstance.create(':memory:', { threads: '2', memory_limit: '1GB', temp_directory: '', autoload_known_extensions: 'false', autoinstall_known_extensions: 'false' });
  mark('create', t); t = performance.now();
  const c = await inst.connect();
  mark('connect', t); t = performance.now();
  await c.run(`ATTACH ':memory:' AS acme; CREATE SCHEMA acme."default"; CREATE VIEW acme."default".traces AS SELECT * FROM read_parquet(['${f1}'], union_by_name=true); SET search_path='acme.default,memory.main'`);
  mark('views', t); t = performance.now();
  await c.run(`SET allowed_paths=['${f1}']; SET enable_external_access=false; SET lock_configuration=true`);
  mark('lock', t); t = performance.now();
  const ex = await c.extractStatements(`SELECT span_id FROM traces WHERE trace_id = $1`);
  mark('extract', t); t = performance.now();
  await c.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', ['SELECT span_id FROM traces WHERE trace_id = $1']);
  mark('json', t); t = performance.now();
  const ps = await ex.prepare(0);
  mark('prepare', t); t = performance.now();
  ps.bindVarchar(1, 'x');
  const r = await ps.stream(); while (await r.fetchChunk()) {}
  mark('exec', t); t = performance.now();
  c.closeSync(); inst.closeSync();
  mark('close', t);
}
for (const [k, v] of Object.entries(times)) { v.sort((a, b) => a - b); console.log(k, v[Math.floor(v.length / 2)]!.toFixed(2)); }
