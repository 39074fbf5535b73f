import { z } from 'zod';
import { issueLines } from './load.ts';
import { limitsSection } from './schema.ts';

/**
 * The keys of limits.* a tenant's `settings.limits` may override, with the same types (rates and
 * burst as numbers, durations as text like "30d"); every key optional, unknown keys refused. The instance-wide ones (store, redis_url, key_prefix) are not a tenant's.
 */
const tenantLimitsSchema = limitsSection.omit({ store: true, redis_url: true, key_prefix: true }).partial();

/** A tenant's own limits, parsed as the config parses them (durations in milliseconds). */
export type TenantLimitOverrides = z.output<typeof tenantLimitsSchema>;

/** What is wrong with a tenant's `settings.limits`, one line per problem (empty: nothing). */
export function tenantLimitsProblems(limits: unknown): string[] {
  const result = tenantLimitsSchema.safeParse(limits);
  const problems = result.success ? [] : issueLines(result.error.issues, ['settings', 'limits']);
  bareNumberDurations(TENANT_LIMITS_JSON, limits, ['settings', 'limits'], problems);
  return problems;
}

interface JsonSchemaNode {
  format?: string;
  properties?: Record<string, JsonSchemaNode>;
}
const TENANT_LIMITS_JSON = z.toJSONSchema(tenantLimitsSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode;

/**
 * A tenant's durations must carry their unit: the config file takes a bare number as milliseconds,
 * but through the API `"retention": 30` meant as days would delete the tenant's data at the next
 * compactor pass, so a number there is refused.
 */
function bareNumberDurations(schema: JsonSchemaNode, value: unknown, path: string[], out: string[]): void {
  if (schema.format === 'duration') {
    if (typeof value === 'number') out.push(`${path.join('.')}: ${value} has no unit; write a duration text such as "30d" or "12h"`);
    return;
  }
  if (!schema.properties || value === null || typeof value !== 'object' || Array.isArray(value)) return;
  for (const [key, child] of Object.entries(schema.properties)) bareNumberDurations(child, (value as Record<string, unknown>)[key], [...path, key], out);
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
