/**
 * bench/regex: the cost of matching label values with tenants' regexes on RE2JS (linear time,
 * @floe/query's anchoredRe2) against V8's backtracking RegExp over the same RE2 patterns (the
 * baseline, measured in the same run), on distinct values and on values that repeat as they do
 * across the steps of a range query (anchoredRe2 remembers answers per value). Prints µs per
 * value and the ratio. Also the one case where the baseline loses without bound: a pattern that
 * backtracks exponentially, timed on RE2JS only (V8 would take ~2^40 steps).
 *
 *   node bench/regex/run.ts [values=200000] [repeats=5]
 */
import { anchoredRe2, re2Source } from '@floe/query';

const N = Number(process.argv[2] ?? 200_000);
const REPEATS = Number(process.argv[3] ?? 5);
const PATTERNS = ['.*api.*', 'service-1.*', 'service-(1|2|3)[0-9]*-web.*', '(?i).*PROD.*', '.+:80[0-4][0-9]'];
const distinct = Array.from({ length: N }, (_, i) => `service-${i % 997}-${['api', 'web', 'worker', 'db'][i % 4]}.prod.example.com:${8000 + (i % 50)}-${i}`);
const repeating = Array.from({ length: N }, (_, i) => distinct[i % 2000]!);

function time(values: readonly string[], test: (s: string) => boolean): { us: number; hits: number } {
  let hits = 0;
  for (const s of values) if (test(s)) hits++; // warm-up
  const t = performance.now();
  hits = 0;
  for (let k = 0; k < REPEATS; k++) for (const s of values) if (test(s)) hits++;
  return { us: ((performance.now() - t) * 1000) / (REPEATS * values.length), hits: hits / REPEATS };
}

console.log(`bench/regex: ${N} label values, ${REPEATS} passes each`);
for (const [name, values] of [['distinct values', distinct], ['values repeating (2,000 distinct)', repeating]] as const) {
  console.log(`  ${name}:`);
  for (const p of PATTERNS) {
    const v8 = new RegExp(`^(?:${re2Source(p, { dotAll: true })})$`, 'u');
    const base = time(values, (s) => v8.test(s));
    const re2 = anchoredRe2(p);
    const floe = time(values, (s) => re2.test(s));
    if (floe.hits !== base.hits) throw new Error(`${p}: ${floe.hits} matches against the baseline's ${base.hits}`);
    console.log(`    ${p.padEnd(30)} V8 ${base.us.toFixed(3)} µs, RE2JS ${floe.us.toFixed(3)} µs per value: ratio ${(base.us / floe.us).toFixed(3)} (${floe.hits} matches)`);
  }
}
const hostile = `${'a'.repeat(40)}b`;
const t = performance.now();
const r = anchoredRe2('(a|a)+').test(hostile);
console.log(`  (a|a)+ against 40 a's and a b: RE2JS ${(performance.now() - t).toFixed(2)} ms (matches: ${r}); V8: ~2^40 backtracking steps (28 a's took 22-25 s on this machine)`);
