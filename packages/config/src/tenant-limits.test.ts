import { describe, expect, it } from 'vitest';
import { tenantLimitOverrides, tenantLimitsProblems } from './tenant-limits.ts';

describe('a tenant\'s settings.limits', () => {
  it('takes duration texts, rates and bursts as numbers', () => {
    expect(tenantLimitsProblems({ retention: '90d', retention_by_table: { traces: '14d' }, ingest_max_age: '30d' })).toEqual([]);
    expect(tenantLimitOverrides({ retention: '90d', retention_by_table: { traces: '14d' } })).toMatchObject({ retention: 90 * 86_400_000, retention_by_table: { traces: 14 * 86_400_000 } });
  });

  it('refuses a duration written as a bare number (the config file would read it as milliseconds), naming the key', () => {
    expect(tenantLimitsProblems({ retention: 5 })).toEqual(['settings.limits.retention: 5 has no unit; write a duration text such as "30d" or "12h"']);
    expect(tenantLimitsProblems({ retention_by_table: { logs: 30 } })).toEqual(['settings.limits.retention_by_table.logs: 30 has no unit; write a duration text such as "30d" or "12h"']);
  });

  it('refuses a duration that is not a whole number of milliseconds a double holds exactly (the usage API and retention cut-offs compute with it)', () => {
    expect(tenantLimitsProblems({ retention: '9999999999999999999999h' })).toEqual(['settings.limits.retention: not a duration: "9999999999999999999999h" (use e.g. "500ms", "5s", "1h")']);
    expect(tenantLimitsProblems({ retention_by_table: { logs: '1.5ms' } })).toEqual(['settings.limits.retention_by_table.logs: not a duration: "1.5ms" (use e.g. "500ms", "5s", "1h")']);
    expect(tenantLimitsProblems({ retention: '1.5s' })).toEqual([]);
  });

  it('refuses unknown keys and the instance-wide ones', () => {
    expect(tenantLimitsProblems({ redis_url: 'redis://x' }).join('\n')).toMatch(/redis_url/);
    expect(tenantLimitsProblems({ no_such_limit: 1 }).join('\n')).toMatch(/no_such_limit/);
  });
});
