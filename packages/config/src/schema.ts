import { z } from 'zod';
import { formatDurationMs, parseDurationMs } from './duration.ts';

/**
 * Every configuration key Floe has, with its default. One section per service or concern;
 * the root nests them. Defaults alone give a working embedded instance (`floe all`).
 * Objects are strict: an unknown key fails start with its full path.
 */

/** A duration written as "5s", "1h", "250ms"; held as milliseconds. */
export const duration = (dflt: string) =>
  z
    .union([z.string(), z.number()])
    .default(dflt)
    .transform((v, ctx) => {
      const ms = typeof v === 'number' ? v : parseDurationMs(v);
      if (ms === undefined || !Number.isFinite(ms) || ms < 0) {
        ctx.addIssue({ code: 'custom', message: `not a duration: ${JSON.stringify(v)} (use e.g. "500ms", "5s", "1h")` });
        return z.NEVER;
      }
      return ms;
    })
    .meta({ format: 'duration' });

const port = (dflt: number) => z.number().int().min(0).max(65535).default(dflt);
const host = z.string().min(1).default('0.0.0.0');
const bytes = (dflt: number) => z.number().int().positive().default(dflt);

export const logSection = z.strictObject({
  level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info').describe('Lowest level written to the log.'),
  format: z.enum(['json', 'pretty']).default('json').describe('json lines (default) or pretty (for a terminal).'),
});

export const metaSection = z.strictObject({
  kind: z.enum(['pglite', 'pg']).default('pglite').describe('pglite: PostgreSQL in-process (embedded default); pg: a PostgreSQL server.'),
  data_dir: z.string().default('./data/meta').describe('PGlite data directory (pglite only). Relative paths resolve against the working directory.'),
  url: z.string().default('').describe('PostgreSQL connection URL (pg only).'),
  pool_max: z.number().int().positive().default(8).describe('Connections in the PostgreSQL pool (pg only).'),
});

export const storageSection = z.strictObject({
  kind: z.enum(['fs', 's3']).default('fs').describe('fs: a local directory (embedded default); s3: an S3-compatible bucket.'),
  root: z.string().default('./data').describe('Local directory holding WAL segments, Parquet files and Iceberg metadata (fs only).'),
  s3: z
    .strictObject({
      bucket: z.string().default('').describe('Bucket name (s3 only).'),
      prefix: z.string().default('').describe('Key prefix inside the bucket.'),
      endpoint: z.string().default('').describe('Endpoint URL of an S3-compatible server; empty for AWS.'),
      region: z.string().default('us-east-1').describe('Region of the bucket.'),
      access_key_id: z.string().default('').describe('Access key; empty uses the AWS default credential chain.'),
      secret_access_key: z.string().default('').describe('Secret key; empty uses the AWS default credential chain.'),
      force_path_style: z.boolean().default(true).describe('Path-style URLs (most S3-compatible servers need them).'),
    })
    .prefault({}),
  cache_dir: z.string().default('./data/cache').describe('Local cache of immutable Parquet files downloaded from S3 for queries.'),
  cache_max_bytes: bytes(10 * 1024 ** 3).describe('Byte budget of the query file cache; least recently used files are evicted.'),
});

export const authSection = z.strictObject({
  admin_api_key: z.string().default('').describe('Break-glass key with full rights over every tenant. Empty disables it.'),
  internal_service_key: z.string().default('').describe('Shared secret of Floe\'s own services: the router signs the SQL its planner prints so a querier may run it on its warm, long-lived DuckDB instead of a per-query sandbox. Empty: in `floe all` a random per-process key is used; split services then sandbox every query.'),
  key_cache_ttl: duration('10s').describe('How long a verified API key is trusted before it is looked up again.'),
  session_ttl: duration('7d').describe('Lifetime of a browser session (floe_session cookie) from sign-in; sign-out, a password change or disabling the user ends it sooner.'),
});

export const acceptorSection = z.strictObject({
  host: host.describe('Interface the service listens on (0.0.0.0: all).'),
  grpc_port: port(4317).describe('OTLP/gRPC port.'),
  http_port: port(4318).describe('OTLP/HTTP port (also serves /ready).'),
  max_body_bytes: bytes(16 * 1024 * 1024).describe('Largest accepted request body, compressed or not (413 / RESOURCE_EXHAUSTED beyond).'),
  max_decompressed_bytes: bytes(64 * 1024 * 1024).describe('Largest body after gzip inflation.'),
  wal_max_segment_bytes: bytes(64 * 1024 * 1024).describe('Most bytes one WAL segment may hold; bigger groups are split.'),
  wal_linger: duration('0s').describe('Extra wait before a group commit to gather more requests (0: commit as soon as possible).'),
  wal_segment_max_age: duration('500ms').describe('Local storage (fs) only: a WAL segment takes group commits as appends (one write and one fdatasync each) for this long, then is sealed and handed to the writer, which adds up to this much to the time before data is queryable. 0: a new segment per group commit (file, rename and two fsyncs), as on S3.'),
  retry_dedup_window: duration('15m').describe('An acceptor also remembers, in its own memory, the requests it made durable for this long, so a client\'s retry of an acknowledged batch is not stored twice even while the shared store (writer.ingest_dedup_window) is unreachable.'),
  quota_cache_ttl: duration('30s').describe('How long a tenant\'s stored-bytes total is reused before the storage quota is checked against the catalog again.'),
});

export const writerSection = z.strictObject({
  host: host.describe('Interface the service listens on (0.0.0.0: all).'),
  admin_port: port(9092).describe('Admin port (/ready).'),
  poll_interval: duration('250ms').describe('How often the WAL is polled for new segments when idle.'),
  flush_interval: duration('2s').describe('Longest a row waits in the WAL before it is committed to Iceberg.'),
  max_rows_per_file: z.number().int().positive().default(250_000).describe('Rows per Parquet file; larger batches are split.'),
  max_segments_per_round: z.number().int().positive().default(512).describe('Most WAL segments consumed by one commit round.'),
  max_bytes_per_round: bytes(256 * 1024 * 1024).describe('Most WAL bytes one commit round reads into memory (always at least one segment): bounds the writer\'s memory while it catches up on a backlog of large appended segments.'),
  ingest_dedup_window: duration('1h').describe('Window in which a byte-identical resend is acknowledged and not stored twice, whichever acceptor it reaches (shared through limits.store).'),
  table_reconcile_interval: duration('5m').describe('How often the tables of every dataset are reconciled with the tenant registry (created, evolved); 0s: only at start.'),
  work_dir: z.string().default('./data/tmp/writer').describe('Local scratch directory for staging Parquet files.'),
  encode_threads: z
    .number()
    .int()
    .positive()
    .default(2)
    .describe(
      "DuckDB threads for the flushes DuckDB still encodes: NDJSON records of older acceptors, batches of several schemas in one flush, and flushes where a materialized label holds a double. Column batches of one schema, the usual flush, are sorted and encoded by the writer's own encoder on one thread of its own.",
    ),
});

export const querierSection = z.strictObject({
  host: host.describe('Interface the service listens on (0.0.0.0: all).'),
  port: port(50054).describe('Arrow Flight (and Tempo querier gRPC) port.'),
  admin_port: port(9094).describe('Admin port (/ready).'),
  query_timeout: duration('30s').describe('Longest a query may run before it is interrupted (504).'),
  memory_limit: z.string().default('2GB').describe('DuckDB memory limit per query.'),
  threads: z.number().int().positive().default(2).describe('DuckDB threads per query.'),
  max_result_rows: z.number().int().positive().default(1_000_000).describe('Rows returned at most per query; the rest is cut.'),
  temp_dir: z.string().default('./data/tmp/querier').describe('Where queries may spill beyond memory_limit.'),
});

export const compactorSection = z.strictObject({
  host: host.describe('Interface the service listens on (0.0.0.0: all).'),
  admin_port: port(9093).describe('Admin port (/ready; /status: the pass in progress and what the last one did).'),
  enabled: z.boolean().default(true).describe('Run compaction passes (false: the service only answers /ready).'),
  interval: duration('5m').describe('Time between the starts of two compaction passes.'),
  target_file_size_mb: z.number().int().positive().default(128).describe('Size compaction aims for per Parquet file.'),
  snapshot_retention: duration('1h').describe('Snapshots older than this are expired (the current one is always kept).'),
  min_file_age: duration('1m').describe('A data file is merged only once committed at least this long ago, so a flush is not rewritten while the writer may still be adding to its hour.'),
  work_dir: z.string().default('./data/tmp/compactor').describe('Local scratch directory for rewrites.'),
  threads: z.number().int().positive().default(2).describe('DuckDB threads of a rewrite.'),
});

export const routerSection = z.strictObject({
  host: host.describe('Interface the service listens on (0.0.0.0: all).'),
  port: port(3000).describe('HTTP port of every query API (also serves /ready).'),
  querier_urls: z.array(z.string()).default([]).describe('Querier Flight addresses (host:port). Empty: the querier of this process (called in-process, without gRPC) or 127.0.0.1:50054.'),
  query_timeout: duration('30s').describe('Deadline the router gives a querier call; fired deadlines answer 504.'),
  compactor_url: z
    .string()
    .default('')
    .describe('Admin URL of the compactor (http://host:9093) that /api/v1/ops/compact drives. Empty: the compactor of this process in `floe all`, else http://127.0.0.1:<compactor.admin_port>.'),
  public_url: z.string().default('http://localhost:3000').describe('Externally visible URL of the router: session cookies are marked Secure when it is https; SSO and source-control callbacks are built from it, never from request headers.'),
  max_body_bytes: bytes(4 * 1024 * 1024).describe('Largest accepted request body.'),
  max_query_samples: z
    .number()
    .int()
    .positive()
    .default(50_000_000)
    .describe('Most points one PromQL query may read (Prometheus --query.max-samples); more is 422 "query processing would load too many samples".'),
  series_label_cache_size: z
    .number()
    .int()
    .min(0)
    .default(200_000)
    .describe(
      'Remote-written series whose Prometheus labels the router keeps for PromQL reads (by tenant, dataset and series id; a few hundred bytes each), so later reads take points without label maps. 0: none kept.',
    ),
  query_demand_flush_interval: duration('30s').describe(
    'How often the counts of attribute keys that queries filter on without a column of their own (query demand, advice for schema.materialized_labels) are added to the metadata DB. 0s: not counted.',
  ),
});

// Spec 3 (Limits: "numeric rate-limit values: not shown"): a budget generous for scripts and
// integrations, tight enough that one tenant's loop cannot starve the others.
export const planningSection = z.strictObject({
  host: host.describe('Interface the product-planning API listens on (0.0.0.0: all).'),
  port: port(3300).describe('HTTP port of the product-planning API under /api/v1 (also serves /ready).'),
  max_body_bytes: bytes(1024 * 1024).describe('Largest accepted request body of the product-planning API (413 beyond).'),
  rate_limit_per_sec: z.number().positive().default(20).describe('Product-planning API requests per second per tenant (token bucket refill rate); over it: 429 with retry_after.'),
  rate_limit_burst: z.number().positive().default(60).describe('Product-planning API requests a tenant may send at once (token bucket size).'),
});

export const runtimeSection = z.strictObject({
  shutdown_delay: duration('0s').describe('Time /ready reports 503 before servers close on SIGTERM, so load balancers drain.'),
  shutdown_timeout: duration('30s').describe('Longest a graceful stop may take before the process exits anyway.'),
  instance_id: z.string().default('').describe('Name of this instance (logs, WAL segment names). Defaults to hostname-pid. WAL segment names add the start time of the process, so a restart under the same name never reuses its predecessor\'s.'),
});

const signalEnabled = (signal: string) => z.boolean().default(true).describe(`Provision the ${signal} tables of every dataset (a tenant's own schema block may narrow it).`);

export const schemaSection = z.strictObject({
  default_schemas: z
    .strictObject({
      traces_enabled: signalEnabled('traces'),
      logs_enabled: signalEnabled('logs'),
      metrics_enabled: signalEnabled('metrics and metric_exemplars'),
      profiles_enabled: signalEnabled('profiles'),
      custom_schemas: z.array(z.record(z.string(), z.unknown())).default([]).describe('Custom table declarations; never provisioned.'),
    })
    .prefault({}),
  // Spec 2, provisioning rule 7: applied only when a table is created (the table records them);
  // tables that exist keep their columns, and the label keeps living in the attribute maps too.
  materialized_labels: z
    .array(z.string().min(1))
    .default([])
    .refine((keys) => new Set(keys).size === keys.length, { message: 'keys must be unique' })
    .describe(
      'Attribute keys promoted to nullable text columns label_<key> (lower-cased, characters outside [a-z0-9_] as _, a name already taken gets _2, _3…) in tables created from now on; the value is the record\'s own attribute, else the resource\'s.',
    ),
});

const rate = (what: string) => z.number().nonnegative().default(0).describe(`${what} (0: unlimited). A tenant's settings.limits may override it.`);
const burst = (what: string) => z.number().nonnegative().default(0).describe(`${what} (0: one second of the rate). A tenant's settings.limits may override it.`);

export const limitsSection = z.strictObject({
  store: z.enum(['memory', 'redis']).default('memory').describe('Where token buckets and resend fingerprints live: this process (memory) or Redis, shared by every acceptor and router of a cluster.'),
  redis_url: z.string().default('redis://127.0.0.1:6379').describe('Redis for limits.store: redis.'),
  key_prefix: z.string().default('floe:').describe('Prefix of every Redis key Floe writes.'),
  ingest_requests_per_sec: rate('Ingest requests per second per tenant'),
  ingest_requests_burst: burst('Ingest requests a tenant may send at once'),
  ingest_bytes_per_sec: rate('Ingest body bytes per second per tenant'),
  ingest_bytes_burst: burst('Ingest body bytes a tenant may send at once'),
  max_query_requests_per_sec: rate('Query API requests per second per tenant (the router\'s query budget)'),
  max_query_requests_burst: burst('Query API requests a tenant may send at once'),
  max_storage_bytes: z.number().int().nonnegative().default(0).describe('Stored data (Parquet bytes of the current snapshots) a tenant may hold before ingest answers quota_exceeded (0: unlimited). A tenant\'s settings.limits may override it.'),
});

export const floeConfigSchema = z.strictObject({
  log: logSection.prefault({}),
  runtime: runtimeSection.prefault({}),
  meta: metaSection.prefault({}),
  storage: storageSection.prefault({}),
  auth: authSection.prefault({}),
  acceptor: acceptorSection.prefault({}),
  writer: writerSection.prefault({}),
  querier: querierSection.prefault({}),
  compactor: compactorSection.prefault({}),
  router: routerSection.prefault({}),
  planning: planningSection.prefault({}),
  schema: schemaSection.prefault({}),
  limits: limitsSection.prefault({}),
});

export type FloeConfig = z.output<typeof floeConfigSchema>;
export type FloeConfigInput = z.input<typeof floeConfigSchema>;

export { formatDurationMs };
