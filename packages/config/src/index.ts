/**
 * @floe/config: the one definition of every configuration key. A YAML file, then environment
 * overrides `FLOE__SECTION__KEY` (double underscore for nesting), then programmatic overrides are
 * merged, validated as a whole (every problem reported with its key path), and deep-frozen.
 * With no file at all the defaults run a working embedded instance.
 */
export { loadConfig, envToTree, ConfigError, ENV_PREFIX } from './load.ts';
export type { LoadOptions } from './load.ts';
export { floeConfigSchema, duration, formatDurationMs, DUCKDB_SIZE } from './schema.ts';
export type { FloeConfig, FloeConfigInput } from './schema.ts';
export { parseDurationMs } from './duration.ts';
export { renderConfigDocs } from './docs.ts';
export { tenantLimitOverrides, tenantLimitsProblems, type TenantLimitOverrides } from './tenant-limits.ts';
