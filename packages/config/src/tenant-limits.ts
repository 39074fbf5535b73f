import { issueLines } from './load.ts';
import { limitsSection } from './schema.ts';

/**
 * The keys of limits.* a tenant's `settings.limits` may override, with the same types (rates and
 * burst as numbers, durations as text like "30d" or milliseconds); every key optional, unknown
 * keys refused. The instance-wide ones (store, redis_url, key_prefix) are not a tenant's.
 */
const tenantLimitsSchema = limitsSection.omit({ store: true, redis_url: true, key_prefix: true }).partial();

/** What is wrong with a tenant's `settings.limits`, one line per problem (empty: nothing). */
export function tenantLimitsProblems(limits: unknown): string[] {
  const result = tenantLimitsSchema.safeParse(limits);
  return result.success ? [] : issueLines(result.error.issues, ['settings', 'limits']);
}
