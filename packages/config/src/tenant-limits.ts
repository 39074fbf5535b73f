import type { z } from 'zod';
import { issueLines } from './load.ts';
import { limitsSection } from './schema.ts';

/**
 * The keys of limits.* a tenant's `settings.limits` may override, with the same types (rates and
 * burst as numbers, durations as text like "30d" or milliseconds); every key optional, unknown
 * keys refused. The instance-wide ones (store, redis_url, key_prefix) are not a tenant's.
 */
const tenantLimitsSchema = limitsSection.omit({ store: true, redis_url: true, key_prefix: true }).partial();

/** A tenant's own limits, parsed as the config parses them (durations in milliseconds). */
export type TenantLimitOverrides = z.output<typeof tenantLimitsSchema>;

/** What is wrong with a tenant's `settings.limits`, one line per problem (empty: nothing). */
export function tenantLimitsProblems(limits: unknown): string[] {
  const result = tenantLimitsSchema.safeParse(limits);
  return result.success ? [] : issueLines(result.error.issues, ['settings', 'limits']);
}

/**
 * The overrides of a tenant's stored `settings.limits` that parse, key by key: a value stored
 * before the API checked them that does not parse counts as not set, so the instance's applies.
 * Only keys present are parsed (a field's default must not become an override).
 */
export function tenantLimitOverrides(limits: unknown): TenantLimitOverrides {
  if (!limits || typeof limits !== 'object' || Array.isArray(limits)) return {};
  const given = limits as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(tenantLimitsSchema.shape)) {
    if (given[key] === undefined) continue;
    const parsed = (field as z.ZodType).safeParse(given[key]);
    if (parsed.success) out[key] = parsed.data;
  }
  return out as TenantLimitOverrides;
}
