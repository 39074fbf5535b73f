// Where tests live: unit tests beside the code in every package and service; end-to-end suites in
// packages/testkit/test start real Floe in both modes (embedded and cluster).
export const testGlobs = [
  'packages/*/src/**/*.test.ts',
  'packages/*/test/**/*.test.ts',
  'services/*/src/**/*.test.ts',
  'services/*/test/**/*.test.ts',
];
