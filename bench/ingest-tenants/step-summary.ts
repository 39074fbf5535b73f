/**
 * Prints what step-times.ts recorded: each writer round's wall time and its commits and rows,
 * then, per commit, the milliseconds of each step (call path) and what the steps do not cover
 * (the round's own work between awaits, and waiting for a turn of the event loop).
 *
 *   node bench/ingest-tenants/step-summary.ts <steps-<pid>.json> [minCommits=2]
 */
import { readFileSync } from 'node:fs';
import type { RoundTimes } from './step-times.ts';

const file = process.argv[2];
if (!file) {
  console.error('usage: node bench/ingest-tenants/step-summary.ts <steps-<pid>.json> [minCommits=2]');
  process.exit(2);
}
const minCommits = Number(process.argv[3] ?? 2);
const rounds = (JSON.parse(readFileSync(file, 'utf8')) as RoundTimes[]).filter((r) => r.commits >= minCommits);
if (rounds.length === 0) {
  console.log(`no round with ${minCommits} commits or more`);
  process.exit(0);
}
const paths = [...new Set(rounds.flatMap((r) => Object.keys(r.steps)))].sort();
const topLevel = paths.filter((p) => !p.includes('>'));
for (const r of rounds) {
  const covered = topLevel.reduce((a, p) => a + (r.steps[p]?.ms ?? 0), 0);
  const per = (ms: number) => (ms / r.commits).toFixed(1);
  const parts = topLevel
    .map((p) => [p, r.steps[p]?.ms ?? 0] as const)
    .filter(([, ms]) => ms / r.commits >= 0.1)
    .sort((a, b) => b[1] - a[1])
    .map(([p, ms]) => `${p} ${per(ms)}`);
  console.log(`${r.at.slice(11, 19)} round ${(r.ms / 1000).toFixed(1)} s, ${r.commits} commits, ${r.rows} rows: ms per commit ${per(r.ms)} = ${parts.join(' + ')} + not in a step ${per(r.ms - covered)}`);
}
const total = (p: string) => rounds.reduce((a, r) => a + (r.steps[p]?.ms ?? 0), 0);
const calls = (p: string) => rounds.reduce((a, r) => a + (r.steps[p]?.calls ?? 0), 0);
const commits = rounds.reduce((a, r) => a + r.commits, 0);
const ms = rounds.reduce((a, r) => a + r.ms, 0);
console.log(`all ${rounds.length} rounds: ${commits} commits, ${(ms / commits).toFixed(1)} ms per commit; by path (ms per commit, calls per commit, ms per call):`);
for (const p of paths.sort((a, b) => total(b) - total(a))) {
  if (total(p) / commits < 0.05) continue;
  console.log(`  ${p.padEnd(36)} ${(total(p) / commits).toFixed(1).padStart(6)} ms  ${(calls(p) / commits).toFixed(2).padStart(5)}  ${(total(p) / calls(p)).toFixed(2).padStart(7)}`);
}
