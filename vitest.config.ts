import { defineConfig } from 'vitest/config';
import { testGlobs } from './vitest.workspace.ts';

export default defineConfig({
  test: {
    include: testGlobs,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Two cores: end-to-end suites start whole fleets, so files run at most two at a time.
    maxWorkers: 2,
    pool: 'forks',
  },
});
