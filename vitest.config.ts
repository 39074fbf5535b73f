import { defineConfig } from 'vitest/config';
import { projects } from './vitest.workspace.ts';

export default defineConfig({
  test: {
    projects: projects.map((root) => ({
      extends: true,
      test: { root, include: ['src/**/*.test.ts', 'test/**/*.test.ts'] },
    })),
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: end-to-end suites start whole fleets, so files run one or two at a time.
    maxWorkers: 2,
    pool: 'forks',
  },
});
