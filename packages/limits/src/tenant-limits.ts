import { tenantLimitOverrides, type FloeConfig } from '@floe/config';
import type { BucketLimit } from './token-bucket.ts';

/**
 * A tenant's limits: the instance defaults (`limits.*`), each overridable per tenant by the same
 * key under the tenant's `settings.limits`. A rate of 0 means unlimited; a burst of 0 means one
 * second's worth of the rate.
 */
export interface TenantLimits {
  ingestRequests: BucketLimit | undefined;
  ingestBytes: BucketLimit | undefined;
  queryRequests: BucketLimit | undefined;
  /** Bytes of stored data the tenant may hold; undefined: unlimited. */
  maxStorageBytes: number | undefined;
  /**
   * How long the tenant's rows of `table` are kept, in milliseconds (0: forever): the tenant's
   * per-table setting, its retention, the instance's per-table value, then limits.retention.
   */
  retentionMs(table: string): number;
  /**
   * Per-stream retention of logs (Loki's retention_stream), in the order they are tried: the
   * tenant's rules by priority, highest first, then the instance's; a line keeps the period of the
   * first whose selector matches it.
   */
  retentionStreams: RetentionStream[];
  /** Metric series the tenant may have active at once; undefined: unlimited. */
  maxActiveSeries: number | undefined;
  /** How long a series stays active after its last data point, in milliseconds. */
  activeSeriesWindowMs: number;
  /** What the metrics generator derives from the tenant's spans (none: nothing). */
  metricsGeneratorProcessors: ReadonlyArray<'span_metrics' | 'service_graphs'>;
  /** How far in the past a row's time may lie at ingest, in milliseconds (0: any age). */
  ingestMaxAgeMs: number;
  /** How far in the future a row's time may lie at ingest, in milliseconds (0: any time). */
  ingestMaxFutureMs: number;
  /** Rule groups the tenant may have per query language. */
  rulerMaxRuleGroups: number;
  /** Rules one of the tenant's rule groups may hold. */
  rulerMaxRulesPerGroup: number;
}

export interface RetentionStream {
  /** LogQL stream selector. */
  selector: string;
  priority: number;
  periodMs: number;
  /** Whose rule it is: the tenant's settings or limits.retention_stream. */
  source: 'tenant' | 'instance';
}

type LimitKeys = Pick<
  FloeConfig['limits'],
  | 'ingest_requests_per_sec'
  | 'ingest_requests_burst'
  | 'ingest_bytes_per_sec'
  | 'ingest_bytes_burst'
  | 'max_query_requests_per_sec'
  | 'max_query_requests_burst'
  | 'max_storage_bytes'
  | 'retention'
  | 'retention_by_table'
  | 'retention_stream'
  | 'ingest_max_age'
  | 'ingest_max_future'
  | 'max_active_series'
  | 'active_series_window'
  | 'metrics_generator_processors'
  | 'ruler_max_rule_groups_per_tenant'
  | 'ruler_max_rules_per_rule_group'
>;

function bucket(rate: number, burst: number): BucketLimit | undefined {
  if (!(rate > 0)) return undefined;
  return { ratePerSec: rate, burst: burst > 0 ? burst : rate };
}

/** Rules highest priority first; equal priorities keep their listed order. */
const byPriority = (rules: ReadonlyArray<{ selector: string; priority: number; period: number }>, source: RetentionStream['source']): RetentionStream[] =>
  rules.map((r) => ({ selector: r.selector, priority: r.priority, periodMs: r.period, source })).sort((a, b) => b.priority - a.priority);

export function tenantLimits(defaults: LimitKeys, tenantSettings: Readonly<Record<string, unknown>> = {}): TenantLimits {
  const own = tenantLimitOverrides(tenantSettings.limits);
  const v = <K extends keyof LimitKeys>(key: K): LimitKeys[K] => (own[key] as LimitKeys[K] | undefined) ?? defaults[key];
  const ownByTable: Readonly<Record<string, number | undefined>> = own.retention_by_table ?? {};
  const byTable: Readonly<Record<string, number | undefined>> = defaults.retention_by_table;
  return {
    ingestRequests: bucket(v('ingest_requests_per_sec'), v('ingest_requests_burst')),
    ingestBytes: bucket(v('ingest_bytes_per_sec'), v('ingest_bytes_burst')),
    queryRequests: bucket(v('max_query_requests_per_sec'), v('max_query_requests_burst')),
    maxStorageBytes: v('max_storage_bytes') > 0 ? v('max_storage_bytes') : undefined,
    retentionMs: (table) => ownByTable[table] ?? own.retention ?? byTable[table] ?? defaults.retention,
    retentionStreams: [...byPriority(own.retention_stream ?? [], 'tenant'), ...byPriority(defaults.retention_stream, 'instance')],
    maxActiveSeries: v('max_active_series') > 0 ? v('max_active_series') : undefined,
    activeSeriesWindowMs: v('active_series_window'),
    metricsGeneratorProcessors: v('metrics_generator_processors'),
    ingestMaxAgeMs: v('ingest_max_age'),
    ingestMaxFutureMs: v('ingest_max_future'),
    rulerMaxRuleGroups: v('ruler_max_rule_groups_per_tenant'),
    rulerMaxRulesPerGroup: v('ruler_max_rules_per_rule_group'),
  };
}

const TENANT_CACHE_MS = 10_000;

/** What cachedTenantLimits reads of a tenant (the metadata DB's tenant record has both). */
export interface TenantRecord {
  settings: Readonly<Record<string, unknown>>;
  createdAt: Date;
}

/** A tenant's limits, and which tenant of that id they belong to. */
export interface CachedTenantLimits extends TenantLimits {
  /**
   * When the tenant was created (ms; undefined: no such tenant): a tenant deleted and created
   * again under the same id is another tenant, and must not be taken for the first (the
   * acceptor's resend fingerprints include it).
   */
  createdAtMs: number | undefined;
}

/**
 * A tenant's limits by id, from its record (`readTenant`, e.g. the metadata DB), cached for 10 s
 * per tenant: a changed limit takes effect within that time on every process.
 */
export function cachedTenantLimits(defaults: LimitKeys, readTenant: (tenant: string) => Promise<TenantRecord | undefined>): (tenant: string) => Promise<CachedTenantLimits> {
  const cache = new Map<string, { at: number; limits: CachedTenantLimits }>();
  return async (tenant) => {
    const hit = cache.get(tenant);
    if (hit && Date.now() - hit.at < TENANT_CACHE_MS) return hit.limits;
    const record = await readTenant(tenant);
    const limits = { ...tenantLimits(defaults, record?.settings ?? {}), createdAtMs: record?.createdAt.getTime() };
    cache.set(tenant, { at: Date.now(), limits });
    return limits;
  };
}
