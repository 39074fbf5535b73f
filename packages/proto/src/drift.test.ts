import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// src/gen is committed; this fails when someone edits proto/ (or bumps protoc-gen-es) without
// running `pnpm gen`, or edits generated code by hand.
const packageDir = fileURLToPath(new URL('..', import.meta.url));
const binDir = join(packageDir, 'node_modules', '.bin');
const committed = join(packageDir, 'src', 'gen');

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

describe('generated code', () => {
  const outDir = mkdtempSync(join(tmpdir(), 'floe-proto-gen-'));
  afterAll(() => rmSync(outDir, { recursive: true, force: true }));

  it('matches a fresh `buf generate` byte for byte', () => {
    execFileSync(join(binDir, 'buf'), ['generate', '../../proto', '--template', 'buf.gen.yaml', '-o', outDir], {
      cwd: packageDir,
      env: { ...process.env, PATH: `${binDir}${delimiter}${process.env.PATH ?? ''}` },
      stdio: 'pipe',
    });
    const fresh = join(outDir, 'src', 'gen');

    const files = listFiles(committed);
    expect(listFiles(fresh)).toEqual(files);
    expect(files.length).toBeGreaterThan(20);
    for (const file of files) {
      const same = readFileSync(join(fresh, file)).equals(readFileSync(join(committed, file)));
      expect(same, `${file} differs from a fresh generation: run \`pnpm gen\``).toBe(true);
    }
  }, 180_000);
});
