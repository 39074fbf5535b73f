import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The dependency rule (STYLE.md "Folder layout"): packages import only lower layers, no service
 * imports another service, only the composition layer imports services, and nothing reaches into
 * another package's files (its public surface is its src/index.ts).
 */
const root = resolve(import.meta.dirname, '../../..');

// Fractions order packages inside a layer where STYLE.md allows it (iceberg may import storage;
// auth may import meta and limits; runtime may import client, which imports nothing, for the
// client-certificate names the CLI reads before loading runtime; the test kit composes the CLI). agent-tools sits with client
// rather than in the composition layer where STYLE.md draws it (above client, which it uses): the
// router mounts its MCP endpoint, and it imports no service (its tools call the router over HTTP).
const LAYER: Record<string, number> = {
  config: 0, errors: 0, proto: 0,
  schema: 1, telemetry: 1, query: 1,
  storage: 2, meta: 2, flight: 2, iceberg: 2.1, limits: 2.1, auth: 2.2,
  client: 2.9, runtime: 3, 'agent-tools': 3.1,
  acceptor: 4, writer: 4, querier: 4, compactor: 4, router: 4, planning: 4,
  cli: 5, testkit: 5.1, bench: 6,
};
const SERVICES = new Set(['acceptor', 'writer', 'querier', 'compactor', 'router', 'planning']);

function units(): Array<{ name: string; dir: string }> {
  const out = [{ name: 'bench', dir: join(root, 'bench') }];
  for (const parent of ['packages', 'services']) {
    for (const d of readdirSync(join(root, parent))) out.push({ name: d, dir: join(root, parent, d) });
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'gen' || entry.startsWith('.')) continue;
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|mts|js)$/.test(entry) && !entry.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

describe('layering', () => {
  it.each(units().map((u) => [u.name, u.dir] as const))('%s imports only what its layer allows', (name, dir) => {
    const mine = LAYER[name];
    expect(mine, `${name} needs a layer in this test`).toBeDefined();
    if (mine === undefined) return;
    const problems: string[] = [];
    for (const file of sourceFiles(dir)) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*)['"]([^'"]+)['"]/g)) {
        const spec = m[1]!;
        const at = relative(root, file);
        if (spec.startsWith('@floe/')) {
          const [target, ...deep] = spec.slice('@floe/'.length).split('/');
          if (deep.length > 0) problems.push(`${at}: deep import ${spec}`);
          const theirs = LAYER[target!];
          if (theirs === undefined) problems.push(`${at}: unknown package ${spec}`);
          else if (target !== name && theirs >= mine) {
            problems.push(`${at}: layer ${mine} (${name}) imports layer ${theirs} (${target})`);
          }
          if (SERVICES.has(target!) && mine < 5) problems.push(`${at}: only the composition layer may import the service ${target}`);
        } else if (spec.startsWith('.')) {
          const resolved = resolve(file, '..', spec);
          if (!resolved.startsWith(dir)) problems.push(`${at}: relative import leaves its package: ${spec}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
