import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { INVALID, VALID, type RuleFixture } from './fixtures.ts';
import { parseRuleFile } from './rule-groups.ts';

/**
 * Prometheus's own checker as the reference: `promtool check rules` (the Debian package
 * `prometheus`) must accept and refuse the same fixture files as parseRuleFile. A machine without
 * promtool fails these tests rather than skipping them, so a missing reference is never mistaken
 * for agreement.
 */

const PROMTOOL_BIN = process.env.FLOE_TEST_PROMTOOL_BIN ?? '/usr/bin/promtool';

function requirePromtool(): string {
  try {
    accessSync(PROMTOOL_BIN, constants.X_OK);
  } catch {
    throw new Error(`no promtool at ${PROMTOOL_BIN}: install the Debian package "prometheus" (apt-get install -y prometheus), or point FLOE_TEST_PROMTOOL_BIN at one`);
  }
  return PROMTOOL_BIN;
}

const dir = mkdtempSync(join(tmpdir(), 'floe-rules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function promtool(fx: RuleFixture): { accepted: boolean; output: string } {
  const file = join(dir, `rules-${files++}.yml`);
  writeFileSync(file, fx.text);
  const r = spawnSync(requirePromtool(), ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
  if (r.error) throw r.error;
  return { accepted: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

function floeAccepts(fx: RuleFixture): boolean {
  try {
    parseRuleFile(fx.text, { language: fx.language });
    return true;
  } catch {
    return false;
  }
}

describe('promtool check rules agrees with parseRuleFile', () => {
  for (const fx of [...VALID, ...INVALID].filter((f) => f.promtool === undefined)) {
    it(`${fx.name}: both ${fx.error === undefined ? 'accept' : 'refuse'} it`, () => {
      expect(floeAccepts(fx)).toBe(fx.error === undefined);
      const { accepted, output } = promtool(fx);
      expect({ accepted, output }).toMatchObject({ accepted: fx.error === undefined });
    });
  }

  // The departures are real: promtool takes what Floe refuses on purpose (see each fixture's reason).
  for (const fx of INVALID.filter((f) => f.promtool?.startsWith('deliberate'))) {
    it(`${fx.name}: Floe refuses what promtool accepts (${fx.promtool})`, () => {
      expect(floeAccepts(fx)).toBe(false);
      expect(promtool(fx).accepted).toBe(true);
    });
  }
});
