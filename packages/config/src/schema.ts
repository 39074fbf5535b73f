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
    });

const port = (dflt: number) => z.number().int().min(0).max(65535).default(dflt);
const host = z.string().min(1).default('0.0.0.0');
const bytes = (dflt: number) => z.number().int().positive().default(dflt);

export const logSection = z.strictObject({
  level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  format: z.enum(['json', 'pretty']).default('json'),
});

export const metaSection = z.strictObject({
  /** pglite: PostgreSQL in-process (embedded default); pg: a PostgreSQL server. */
  kind: z.enum(['pglite', 'pg']).default('pglite'),
  /** PGlite data directory (pglite only). Relative paths resolve against the working directory. */
  data_dir: z.string().default('./data/meta'),
  /** PostgreSQL connection URL (pg only). */
  url: z.string().default(''),
  pool_max: z.number().int().positive().default(8),
});

export const storageSection = z.strictObject({
  kind: z.enum(['fs', 's3']).default('fs'),
  /** Local directory holding WAL segments, Parquet files and Iceberg metadata (fs only). */
  root: z.string().default('./data'),
  s3: z
    .strictObject({
      bucket: z.string().default(''),
      prefix: z.string().default(''),
      endpoint: z.string().default(''),
      region: z.string().default('us-east-1'),
      access_key_id: z.string().default(''),
      secret_access_key: z.string().default(''),
      force_path_style: z.boolean().default(true),
    })
    .prefault({}),
  /** Local cache of immutable Parquet files downloaded from S3 for queries. */
  cache_dir: z.string().default('./data/cache'),
  cache_max_bytes: bytes(10 * 1024 ** 3),
});

export const authSection = z.strictObject({
  /** Break-glass key with full rights over every tenant. Empty disables it. */
  admin_api_key: z.string().default(''),
  /**
   * Shared secret of Floe's own services: the router signs the SQL its planner prints so a
   * querier may run it on its warm, long-lived DuckDB instead of a per-query sandbox. Empty: in
   * `floe all` a random per-process key is used; split services then sandbox every query.
   */
  internal_service_key: z.string().default(''),
  /** How long a verified API key is trusted before it is looked up again. */
  key_cache_ttl: duration('10s'),
});

export const acceptorSection = z.strictObject({
  host,
  grpc_port: port(4317),
  http_port: port(4318),
  /** Largest accepted request body, compressed or not (413 / RESOURCE_EXHAUSTED beyond). */
  max_body_bytes: bytes(16 * 1024 * 1024),
  /** Largest body after gzip inflation. */
  max_decompressed_bytes: bytes(64 * 1024 * 1024),
  /** Most bytes one WAL segment may hold; bigger groups are split. */
  wal_max_segment_bytes: bytes(64 * 1024 * 1024),
  /** Extra wait before a group commit to gather more requests (0: commit as soon as possible). */
  wal_linger: duration('0s'),
});

export const writerSection = z.strictObject({
  host,
  admin_port: port(9092),
  /** How often the WAL is polled for new segments when idle. */
  poll_interval: duration('250ms'),
  /** Longest a row waits in the WAL before it is committed to Iceberg. */
  flush_interval: duration('2s'),
  /** Rows per Parquet file; larger batches are split. */
  max_rows_per_file: z.number().int().positive().default(250_000),
  /** Most WAL segments consumed by one commit round. */
  max_segments_per_round: z.number().int().positive().default(512),
  ingest_dedup_window: duration('1h'),
  table_reconcile_interval: duration('5m'),
  work_dir: z.string().default('./data/tmp/writer'),
});

export const querierSection = z.strictObject({
  host,
  /** Arrow Flight (and Tempo querier gRPC) port. */
  port: port(50054),
  admin_port: port(9094),
  query_timeout: duration('30s'),
  memory_limit: z.string().default('2GB'),
  threads: z.number().int().positive().default(2),
  max_result_rows: z.number().int().positive().default(1_000_000),
  temp_dir: z.string().default('./data/tmp/querier'),
});

export const compactorSection = z.strictObject({
  host,
  admin_port: port(9093),
  enabled: z.boolean().default(true),
  interval: duration('5m'),
  target_file_size_mb: z.number().int().positive().default(128),
  /** Snapshots older than this are expired (the current one is always kept). */
  snapshot_retention: duration('1h'),
  work_dir: z.string().default('./data/tmp/compactor'),
});

export const routerSection = z.strictObject({
  host,
  port: port(3000),
  /** Querier Flight addresses (host:port). Empty: the querier of this process or 127.0.0.1:50054. */
  querier_urls: z.array(z.string()).default([]),
  /** Deadline the router gives a querier call; fired deadlines answer 504. */
  query_timeout: duration('30s'),
  /** Public URL (used for cookies and links later). */
  public_url: z.string().default('http://localhost:3000'),
  max_body_bytes: bytes(4 * 1024 * 1024),
});

export const runtimeSection = z.strictObject({
  /** Time /ready reports 503 before servers close on SIGTERM, so load balancers drain. */
  shutdown_delay: duration('0s'),
  /** Longest a graceful stop may take before the process exits anyway. */
  shutdown_timeout: duration('30s'),
  /** Name of this instance (WAL segment names, logs). Defaults to hostname-pid. */
  instance_id: z.string().default(''),
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
});

export type FloeConfig = z.output<typeof floeConfigSchema>;
export type FloeConfigInput = z.input<typeof floeConfigSchema>;

export { formatDurationMs };
