/**
 * Summarises a V8 .cpuprofile (as written by `node --cpu-prof`, e.g. the Floe process of a
 * benchmark run with FLOE_BENCH_CPU_PROF=<dir>): self time by source area (a workspace package
 * or service, a dependency, Node internals, GC, idle) and the functions with the most self time.
 *
 *   node bench/lib/cpu-profile-summary.ts <file.cpuprofile> [top=30]
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const file = process.argv[2];
if (!file) {
  console.error('usage: node bench/lib/cpu-profile-summary.ts <file.cpuprofile> [top=30]');
  process.exit(2);
}
const TOP = Number(process.argv[3] ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);

function area(f: CallFrame): string {
  const u = f.url;
  if (!u) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  if (u.startsWith('node:')) return `node:${u.slice(5).split('/')[0]}`;
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = u.slice(nm + 14).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const m = /\/(packages|services)\/([^/]+)\/(?:src\/)?(.*)$/.exec(u);
  if (m) return `${m[1]}/${m[2]}`;
  return u;
}

const areas = new Map<string, number>();
const funcs = new Map<string, number>();
for (const [id, us] of self) {
  const f = byId.get(id)!.callFrame;
  areas.set(area(f), (areas.get(area(f)) ?? 0) + us);
  const file = f.url.replace(/^.*\/(packages|services|node_modules)\//, '$1/');
  const key = `${f.functionName || '(anonymous)'} ${file ? `${file}:${f.lineNumber + 1}` : ''}`;
  funcs.set(key, (funcs.get(key) ?? 0) + us);
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`);
console.log('self time by area:');
for (const [k, v] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`  ${pct(v)}  ${k}`);
console.log(`top ${TOP} functions by self time:`);
for (const [k, v] of [...funcs].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${pct(v)}  ${k}`);
