import { flightDoGet } from '@floe/flight';
const key = process.argv[2]!, url = process.argv[3]!;
const ts: number[] = [];
for (let i = 0; i < 300; i++) {
  const t0 = performance.now();
  await flightDoGet({ url, ticket: Buffer.from('SELECT 1'), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': 'bench' }, deadlineMs: 10000 });
  ts.push(performance.now() - t0);
}
ts.sort((a, b) => a - b);
console.log('p50', ts[150]!.toFixed(2), 'p90', ts[270]!.toFixed(2));
