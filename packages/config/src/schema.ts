import { z } from 'zod';
import { formatDurationMs, parseDurationMs } from './duration.ts';

/**
 * Every configuration key Floe has, with its default. One section per service or concern;
 * the root nests them. Defaults alone give a working embedded instance (`floe all`).
 * Objects are strict: an unknown key fails start with its full path.
 */

const toMs = (v: string | number, ctx: z.RefinementCtx): number => {
  const ms = typeof v === 'number' ? v : parseDurationMs(v);
  // Whole milliseconds a double holds exactly: what every reader (retention cut-offs, the usage
  // API's integers) can compute with.
  if (ms === undefined || !Number.isSafeInteger(ms) || ms < 0) {
    ctx.addIssue({ code: 'custom', message: `not a duration: ${JSON.stringify(v)} (use e.g. "500ms", "5s", "1h")` });
    return z.NEVER;
  }
  return ms;
};

/** A duration written as "5s", "1h", "250ms"; held as milliseconds. */
export const duration = (dflt: string) => z.union([z.string(), z.number()]).default(dflt).transform(toMs).meta({ format: 'duration' });

/** A duration with no default: absent means "not set here". */
const optionalDuration = () => z.union([z.string(), z.number()]).transform(toMs).optional().meta({ format: 'duration' });

const port = (dflt: number) => z.number().int().min(0).max(65535).default(dflt);
const host = z.string().min(1).default('0.0.0.0');
const bytes = (dflt: number) => z.number().int().positive().default(dflt);

/** The sizes DuckDB's memory_limit takes ("2GB", "512MiB", "1.5 GB"): the querier's sandbox accepts the same. */
export const DUCKDB_SIZE = /^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$/i;
/** A DuckDB memory_limit, checked at start rather than when the first instance is created. */
const duckdbSize = (dflt: string) =>
  z
    .string()
    .default(dflt)
    .refine((v) => DUCKDB_SIZE.test(v), { message: 'not a DuckDB memory size (use e.g. "2GB", "512MB", "1GiB")' });

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

// Spec 2, Authentication (SSO rule 4): settings that cannot work together fail start naming the key.
const isHttpUrl = (v: string) => {
  try {
    const u = new URL(v);
    return (u.protocol === 'https:' || u.protocol === 'http:') && !u.search && !u.hash;
  } catch {
    return false;
  }
};

export const oidcSection = z
  .strictObject({
    issuer_url: z.string().default('').describe('Issuer of the single OIDC identity provider (its discovery document is read at start). Empty: no SSO.'),
    client_id: z.string().default('').describe('Client id registered at the provider (required with issuer_url).'),
    client_secret: z.string().default('').describe('Client secret of the confidential client (required with issuer_url).'),
    redirect_url: z.string().default('').describe('Redirect URI registered at the provider, used verbatim. Empty: {public.api_url}/ui/session/oidc/callback.'),
    display_name: z.string().default('').describe('Name of the provider on the login page. Empty: the issuer host.'),
    allowed_email_domains: z
      .array(z.string().min(1))
      .default([])
      .describe('Email domains whose users are created at their first SSO sign-in. Gates creation only: an existing user with the same verified email links regardless. Empty: nobody is created.'),
    group_claim: z.string().default('').describe('Claim holding the user\'s groups (required with group_mappings).'),
    group_mappings: z
      .array(z.strictObject({ group: z.string().min(1), tenant: z.string().min(1), role: z.enum(['admin', 'member', 'viewer']) }))
      .default([])
      .describe('Memberships granted at every SSO sign-in from the user\'s groups, kept apart from local grants and removed when the group is lost; never instance admin.'),
    disable_password_login: z.boolean().default(false).describe('Refuse the password form for every user (API keys, the admin key and `floe admin bootstrap` still work). Requires issuer_url.'),
  })
  .superRefine((o, ctx) => {
    const problem = (key: string, message: string) => ctx.addIssue({ code: 'custom', path: [key], message });
    if (o.group_mappings.length > 0 && !o.group_claim) problem('group_claim', 'required when group_mappings is set');
    if (o.disable_password_login && !o.issuer_url) problem('disable_password_login', 'requires issuer_url (no other way to sign in)');
    if (!o.issuer_url) return;
    if (!isHttpUrl(o.issuer_url)) problem('issuer_url', `not an http(s) URL without query or fragment: ${JSON.stringify(o.issuer_url)}`);
    if (!o.client_id) problem('client_id', 'required when issuer_url is set');
    if (!o.client_secret) problem('client_secret', 'required when issuer_url is set');
    if (o.redirect_url && !isHttpUrl(o.redirect_url)) problem('redirect_url', `not an http(s) URL: ${JSON.stringify(o.redirect_url)}`);
  });

// Spec 2's consent flow: Floe as the OAuth 2.1 authorization server of its own APIs (MCP clients).
export const oauthSection = z.strictObject({
  enabled: z.boolean().default(true).describe('Serve the OAuth 2.1 authorization server (/oauth/*, /.well-known/oauth-*): clients such as MCP agents register themselves and a signed-in user grants them one tenant\'s query (and, for members, ingest) access.'),
  access_token_ttl: duration('1h').describe('Lifetime of an access token (an API key of the tenant that expires); a refresh re-checks the user\'s membership.'),
  refresh_token_ttl: duration('30d').describe('How long a grant lasts without being refreshed; every refresh rotates the refresh token and extends it.'),
  consent_url: z.string().default('').describe('Page that asks the user to approve a client (it reads GET /oauth/consent/context and posts /oauth/authorize/decision; the request handle arrives as ?request=). Empty: the router\'s own page at /oauth/consent.'),
});

export const authSection = z.strictObject({
  oidc: oidcSection.prefault({}),
  oauth: oauthSection.prefault({}),
  admin_api_key: z.string().default('').describe('Break-glass key with full rights over every tenant. Empty disables it.'),
  internal_service_key: z.string().default('').describe('Shared secret of Floe\'s own services: the router signs the SQL its planner prints so a querier may run it on its warm, long-lived DuckDB instead of a per-query sandbox. It also stands for a signed-in user\'s native queries (POST /api/v1/query), which the querier accepts for reads only, and is the credential the compactor\'s admin actions (POST /compact) demand, which the router presents; keep it as secret as the admin key. Empty: in `floe all` a random per-process key is used; split services then sandbox every query and refuse session queries (503).'),
  key_cache_ttl: duration('10s').describe('How long a verified API key is trusted before it is looked up again.'),
  session_ttl: duration('7d').describe('Lifetime of a browser session (floe_session cookie) from sign-in; sign-out, a password change or disabling the user ends it sooner.'),
});

// Spec 2, Demo mode: a public read-only account, provisioned at every start.
export const demoSection = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Provision the read-only demo account at every start and show its credentials on the login page.'),
    tenant_id: z.string().default('').describe('Tenant the demo user may view (required when enabled; must already exist).'),
    dataset_id: z.string().default('').describe('Dataset the demo opens on (optional): the login configuration names it beside the tenant; one the tenant lacks is logged as a warning at start.'),
    username: z.string().default('').describe('Email address of the demo user (required when enabled).'),
    password: z.string().default('').describe('Password of the demo user, shown publicly on the login page (required when enabled).'),
  })
  .superRefine((d, ctx) => {
    if (!d.enabled) return;
    const problem = (key: string, message: string) => ctx.addIssue({ code: 'custom', path: [key], message });
    if (!d.tenant_id) problem('tenant_id', 'required when demo.enabled');
    if (!/^[^\s@]+@[^\s@]+$/.test(d.username)) problem('username', 'required when demo.enabled, in <EMAIL> form');
    if (!d.password) problem('password', 'required when demo.enabled');
  });

export const acceptorSection = z.strictObject({
  host: host.describe('Interface the service listens on (0.0.0.0: all).'),
  grpc_port: port(4317).describe('OTLP/gRPC port.'),
  http_port: port(4318).describe('OTLP/HTTP port (also serves /ready).'),
  max_body_bytes: bytes(16 * 1024 * 1024).describe('Largest accepted request body, compressed or not (413 / RESOURCE_EXHAUSTED beyond).'),
  max_decompressed_bytes: bytes(64 * 1024 * 1024).describe('Largest body after gzip inflation.'),
  max_inflight_requests: z.number().int().positive().default(2000).describe('Ingest requests this acceptor receives or processes at once, every port and tenant together; more are refused with 503 / UNAVAILABLE and Retry-After (retried by exporters and Prometheus), so a surge cannot exhaust its memory.'),
  max_inflight_bytes: bytes(1024 * 1024 * 1024).describe('Body bytes of the ingest requests in flight on this acceptor at once, as sent and, for compressed bodies, what they inflated to; a request that would pass it is refused like one over max_inflight_requests. One request alone may always be max_body_bytes. An HTTP request without Content-Length (chunked) counts as max_body_bytes until it is in.'),
  http2: z
    .boolean()
    .default(true)
    .describe("The OTLP/HTTP port (and the other HTTP ingest APIs on it) also speaks HTTP/2: offered by ALPN with TLS, as Go's OpenTelemetry Collector and SDKs then choose, and by prior knowledge (h2c) in cleartext; many requests share one connection. false: HTTP/1.1 only."),
  max_inflight_tenant_share: z
    .number()
    .gt(0)
    .max(1)
    .default(0.5)
    .describe('The part of max_inflight_requests and max_inflight_bytes one tenant may hold on this acceptor once its key is checked (a tenant with nothing in flight always gets one request in); past it that tenant is refused with 503 / UNAVAILABLE and Retry-After while others are accepted, so one tenant\'s slow or huge uploads cannot take the whole room. 1: no share.'),
  read_timeout: duration('30s')
    .refine((ms) => ms >= 100, 'must be at least 100ms')
    .describe('Longest an OTLP/HTTP (or remote write, push) request may take to arrive, headers and body, as Loki\'s and Mimir\'s http_server_read_timeout: a slower upload has its connection closed (the client retries), so uploads that stall cannot hold the in-flight room (max_inflight_requests, max_inflight_bytes) from everyone else.'),
  wal_max_segment_bytes: bytes(64 * 1024 * 1024).describe('Most bytes one WAL segment may hold; bigger groups are split.'),
  wal_linger: duration('0s').describe('Extra wait before a group commit to gather more requests (0: commit as soon as possible).'),
  wal_segment_max_age: duration('500ms').describe('Local storage (fs) only: a WAL segment takes group commits as appends (one write and one fdatasync each) for this long, then is sealed and handed to the writer, which adds up to this much to the time before data is queryable. 0: a new segment per group commit (file, rename and two fsyncs), as on S3.'),
  max_wal_backlog: z
    .number()
    .int()
    .nonnegative()
    .default(4 * 1024 ** 3)
    .describe(
      'Most bytes of WAL segments the writer has not consumed yet (all acceptors\' together, listed about every second). Above it, ingest is refused with 503 / UNAVAILABLE and Retry-After, which exporters and Prometheus retry, instead of filling the disk or bucket while the writer is down or behind. Segments a writer keeps only for tables it cannot commit (damaged metadata, say) do not count here: past this many bytes of them for one dataset, only that dataset is refused (503, FLOE_ERR_WAL_TABLE_HELD), and past it for all datasets together, every dataset holding any. 0: no limit.',
    ),
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
  max_bytes_per_round: bytes(256 * 1024 * 1024).describe('Most WAL bytes one commit round reads into memory (always at least one segment): bounds the writer\'s memory while it catches up on a backlog of large appended segments. The writer keeps that much (at most 1 GiB) from round to round, and lets it go once the WAL has been empty for 30 s.'),
  ingest_dedup_window: duration('1h').describe('Window in which a byte-identical resend is acknowledged and not stored twice, whichever acceptor it reaches (shared through limits.store).'),
  wal_marker_retention: duration('7d').describe(
      'How long the WAL idempotency markers (the segments each snapshot consumed, in its summary) are read and keep snapshots from expiring. A WAL segment older than this is not committed but set aside under wal-quarantine/ for an operator: the markers that would say whether it was already committed may be gone.',
    ),
  member_ttl: duration('15s').describe(
    'Several writers may read one WAL: each holds a lease in the metadata DB, renewed every third of this, and commits the segments that rendezvous hashing over the live writers gives it. A writer that stops hands its share over at once; one that dies, after this long.',
  ),
  table_reconcile_interval: duration('5m').describe('How often the tables of every dataset are reconciled with the tenant registry (created, evolved); 0s: only at start.'),
  work_dir: z.string().default('./data/tmp/writer').describe('Local scratch directory for staging Parquet files.'),
  commit_concurrency: z
    .number()
    .int()
    .positive()
    .max(64)
    .default(8)
    .describe(
      "Tables a commit round writes and commits at once. Each table's commit is a data file upload and the Iceberg append's manifest, manifest list and metadata file, waits more than work, so with many tenants one at a time left the writer behind the WAL (bench/ingest-tenants). Encoding stays on the writer's encoding thread, one file after another.",
    ),
  encode_threads: z
    .number()
    .int()
    .positive()
    .default(2)
    .describe(
      "DuckDB threads for the flushes DuckDB still encodes: NDJSON records of older acceptors, batches of several schemas in one flush, and flushes where a materialized label holds a double. Column batches of one schema, the usual flush, are sorted and encoded by the writer's own encoder on one thread of its own.",
    ),
  memory_limit: duckdbSize('2GB').describe(
    "DuckDB memory limit of the writer's DuckDB instance (the flushes encode_threads describes; the writer's own encoder is outside it). Beyond it DuckDB spills its sorts to work_dir. What it holds is the gauge duckdb_memory_bytes{component=\"writer\"}.",
  ),
});

export const querierSection = z.strictObject({
  host: host.describe('Interface the service listens on (0.0.0.0: all).'),
  port: port(50054).describe('Arrow Flight (and Tempo querier gRPC) port.'),
  admin_port: port(9094).describe('Admin port (/ready).'),
  query_timeout: duration('30s').describe('Longest a query may run before it is interrupted (504).'),
  memory_limit: duckdbSize('2GB').describe(
    'DuckDB memory limit per query, and of the one instance the planned queries share (what that instance holds is the gauge duckdb_memory_bytes{component="querier"}).',
  ),
  max_concurrent: z
    .number()
    .int()
    .positive()
    .default(8)
    .describe('Queries this querier runs at once (every Flight call that runs SQL, the routers\' planned queries and trace lookups included); the rest wait, the tenants with queries waiting taking turns, so one tenant\'s burst does not delay the others. Bounds memory: user SQL takes up to memory_limit each, the planned queries share one memory_limit.'),
  max_queued_per_tenant: z
    .number()
    .int()
    .positive()
    .default(1000)
    .describe('Queries one tenant may have waiting for this querier; beyond it a query is refused with 429 (RESOURCE_EXHAUSTED) "too many outstanding requests", as Loki\'s scheduler does. A query still waiting at its deadline fails with a timeout (504) without running.'),
  threads: z.number().int().positive().default(2).describe('DuckDB threads per query.'),
  max_result_rows: z.number().int().positive().default(1_000_000).describe('Rows returned at most per query; the rest is cut.'),
  max_result_mb: z
    .number()
    .int()
    .positive()
    .default(512)
    .describe(
      "Largest result one query may hold (MB of Arrow data; values are kept whole until the answer is sent, outside DuckDB's memory_limit). A bigger one is refused with 422 (INVALID_ARGUMENT over Flight) instead of putting the querier's memory, and every tenant's queries, at risk; checked per chunk of 2,048 rows.",
    ),
  max_held_result_mb: z
    .number()
    .int()
    .positive()
    .default(1024)
    .describe(
      "Results this querier holds at once for clients that have not read them yet (Flight results as MB of Arrow data; Tempo FindTraceByID and SearchRecent answers as encoded protobuf); one tenant may hold half of it. A result that does not fit is refused with 429 (RESOURCE_EXHAUSTED over Flight) and Retry-After (422 when it alone is more than half), so slow or stalled readers cannot hold max_result_mb each until the process runs out of memory. A result is held until sent, and at most query_timeout (or the client's deadline, if sooner) once it is whole: a client still reading then is cut off (CANCELLED). At least twice max_result_mb.",
    ),
  temp_dir: z.string().default('./data/tmp/querier').describe('Where queries may spill beyond memory_limit.'),
  series_cache_mb: z
    .number()
    .int()
    .nonnegative()
    .default(512)
    .describe(
      "Memory for metric points kept per data file (MB; 0: none). PromQL's point reads keep what they read from each file and answer later windows (a dashboard's next refresh, an instant query) from it, cut to the window, reading only files not seen yet: data files never change, so nothing kept goes stale.",
    ),
}).superRefine((q, ctx) => {
  // A tenant may hold half of it: below twice max_result_mb, a result max_result_mb allows could never be served.
  if (q.max_held_result_mb < 2 * q.max_result_mb) {
    ctx.addIssue({ code: 'custom', path: ['max_held_result_mb'], message: `must be at least twice querier.max_result_mb (${2 * q.max_result_mb})` });
  }
});

export const compactorSection = z.strictObject({
  host: host.describe('Interface the service listens on (0.0.0.0: all).'),
  admin_port: port(9093).describe('Admin port (/ready; /status: the pass in progress and what the last one did).'),
  enabled: z.boolean().default(true).describe('Run compaction passes (false: the service only answers /ready).'),
  interval: duration('5m').describe('Time between the starts of two compaction passes.'),
  open_hour_interval: duration('15s').describe(
    "How often, between passes, the writer's flush files of hours still being written are merged by concatenation (their row groups copied into one file, up to 32 a file, nothing decoded or sorted), and how old a file must be for it (min_file_age if shorter). The writer adds a file per table and hour every flush; each one costs every query over that hour until it is merged. Passes sort bigger files of an open hour, and a closed hour once. 0s: only passes merge, by concatenation too.",
  ),
  target_file_size_mb: z.number().int().positive().default(128).describe('Size compaction aims for per Parquet file.'),
  snapshot_retention: duration('1h').describe('Snapshots older than this are expired (the current one is always kept).'),
  min_file_age: duration('1m').describe('A data file is sort-merged only once committed at least this long ago, so a flush is not rewritten while the writer may still be adding to its hour. The open hour\'s flush files are concatenated sooner: once open_hour_interval old, or this if shorter.'),
  delete_request_cancel_period: duration('24h').describe(
    'How long a delete request (the log API\'s POST /loki/api/v1/delete) can be cancelled before the compactor deletes its rows: the first pass after this period rewrites the affected files. Queries leave the rows out from the moment the request is recorded.',
  ),
  member_ttl: duration('15s').describe(
    'Several compactors may run: each holds a lease in the metadata DB, renewed every third of this, and its periodic passes visit the tables (and delete requests) that rendezvous hashing over the live compactors gives it; on-demand passes visit every table of their scope. One that stops hands its tables over at once; one that dies, after this long.',
  ),
  work_dir: z.string().default('./data/tmp/compactor').describe('Local scratch directory for rewrites.'),
  threads: z.number().int().positive().default(2).describe('DuckDB threads of a rewrite.'),
  memory_limit: duckdbSize('2GB').describe(
    "DuckDB memory limit of the compactor's rewrites (merges, retention and delete rewrites, one at a time). Beyond it DuckDB spills their sorts to work_dir. What it holds is the gauge duckdb_memory_bytes{component=\"compactor\"}.",
  ),
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
  planning_url: z
    .string()
    .default('')
    .describe(
      'Base URL of the product-planning API (http://host:3300) whose paths (/api/v1/products, /releases, /features, …) the router forwards, so that API answers at the router\'s address too (spec 3\'s base address). Empty: the planning service of this process when one runs beside the router (`floe all planning`), else those paths are 404 here.',
    ),
  max_body_bytes: bytes(4 * 1024 * 1024).describe('Largest accepted request body.'),
  read_timeout: duration('30s')
    .refine((ms) => ms >= 1000, 'must be at least 1s')
    .describe('Longest a request body may take to arrive (management JSON, query POSTs and forms, OAuth token forms, MCP messages; over HTTP/1.1 or HTTP/2): a slower upload has its connection closed (its HTTP/2 stream reset), so clients that send their headers and then dribble or stall their body cannot hold connections and requests open for ever. Requests without a body are not affected.'),
  send_timeout: duration('1m')
    .refine((ms) => ms >= 1000, 'must be at least 1s')
    .describe('A response whose client takes none of it for this long is cut off (its connection or HTTP/2 stream closed), so a client that stops reading cannot hold a large answer in memory for ever. Counts only while a response is being sent, not while its query runs.'),
  max_held_answer_mb: z
    .number()
    .int()
    .positive()
    .default(1024)
    .describe(
      "Query answers (MB of serialized JSON or protobuf) this router holds at once until their clients have read them; one tenant may hold half of it. A tenant holding its half is refused before its query runs, and an answer that does not fit is refused in its place, with 429 and Retry-After (422 when it alone is more than half), so slow or stalled readers cannot hold large answers until the process runs out of memory (send_timeout bounds how long each is held).",
    ),
  max_query_samples: z
    .number()
    .int()
    .positive()
    .default(50_000_000)
    .describe('Most points one PromQL query may read, and again may produce in its subqueries and steps (each subquery step counting at least one: a query whose subquery steps alone pass it is refused before it runs), as Prometheus --query.max-samples; more is 422 "query processing would load too many samples".'),
  promql_threads: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(2)
    .describe('Threads that evaluate heavy PromQL queries (past about 5 million values; smaller ones run on the event loop): each takes the next query when free, so this many heavy queries run at once and later ones wait, within their timeout.'),
  remote_read_max_samples: z
    .number()
    .int()
    .positive()
    .default(5_000_000)
    .describe('Most samples one Prometheus remote read answer (POST /metricquery/api/v1/read) may hold, built in memory at about 20 bytes each (Prometheus --storage.remote.read-sample-limit); more is 422.'),
  tempo_streaming: z.boolean().default(true).describe('The router\'s port also speaks HTTP/2 (cleartext with prior knowledge, or offered by ALPN with tls), serving the HTTP API and Tempo\'s streaming search (gRPC tempopb.StreamingQuerier/Search) for Grafana\'s Tempo data source with its streaming option on. False: HTTP/1.1 only.'),
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
/** How the world reaches Floe (spec 2: public.api_url). */
export const publicSection = z.strictObject({
  api_url: z.string().default('http://localhost:3000').describe('Externally visible URL of the router: session cookies are marked Secure when it is https; SSO, source-control and OAuth callbacks and the OAuth issuer are built from it, never from request headers.'),
});

export const planningSection = z.strictObject({
  host: host.describe('Interface the product-planning API listens on (0.0.0.0: all).'),
  port: port(3300).describe('HTTP port of the product-planning API under /api/v1 (also serves /ready).'),
  max_body_bytes: bytes(1024 * 1024).describe('Largest accepted request body of the product-planning API (413 beyond).'),
  rate_limit_per_sec: z.number().positive().default(20).describe('Product-planning API requests per second per tenant (token bucket refill rate); over it: 429 with retry_after.'),
  rate_limit_burst: z.number().positive().default(60).describe('Product-planning API requests a tenant may send at once (token bucket size).'),
});

// Server TLS, as Loki's and Tempo's `tls_server_config`: one certificate per process, served on
// every port a client outside the cluster reaches. Admin ports (/ready, /metrics, /status, the
// compactor's actions) stay cleartext unless admin_ports says otherwise (probes and scrapes inside
// the cluster), and never ask for client certificates; the planning port stays cleartext.
export const tlsSection = z
  .strictObject({
    cert_file: z.string().default('').describe('PEM certificate chain (the server\'s certificate first). With key_file, this process serves TLS on the acceptor\'s OTLP gRPC and HTTP ports, the router\'s port (HTTPS, and Tempo\'s streaming gRPC over HTTP/2 by ALPN) and the querier\'s Flight port. Empty: cleartext.'),
    key_file: z.string().default('').describe('PEM private key of cert_file.'),
    ca_file: z.string().default('').describe('PEM bundle of certificate authorities this process trusts, beside the system\'s, when it calls a TLS endpoint: another Floe service (grpc+tls:// querier URLs, an https:// remote-write URL), an Alertmanager, an OIDC provider, a self-monitoring endpoint. Empty: the system\'s authorities (and NODE_EXTRA_CA_CERTS).'),
    client_ca_file: z.string().default('').describe('PEM bundle of the authorities whose client certificates the public TLS ports accept. When set, every connection to the acceptor\'s, the router\'s and the querier\'s TLS ports must present a certificate one of them signed, or the handshake fails (mutual TLS, as Loki\'s and Tempo\'s client_auth_type RequireAndVerifyClientCert); Floe\'s own calls to those ports present cert_file, which then needs clientAuth among its extended key usages (or none at all). Re-read with the certificate. Empty: no client certificate is asked for. Needs cert_file.'),
    admin_ports: z
      .boolean()
      .default(false)
      .describe(
        "Serve the admin ports (writer, querier and compactor: /ready, /healthz, /status, /metrics, the compactor's actions) over TLS with cert_file too, so the internal service key the router presents to the compactor and the tenants /status names do not cross the network in clear. No client certificate is asked for there, whatever client_ca_file says (probes and scrapers rarely have one): point probes and scrapes at https (Kubernetes `scheme: HTTPS`). Needs cert_file.",
      ),
    reload_interval: duration('1m')
      .refine((ms) => ms >= 1000, 'must be at least 1s')
      .describe('How often cert_file, key_file and client_ca_file are read again: a renewed certificate (cert-manager, a mounted secret) is served to new connections, and presented by new outgoing ones, without a restart.'),
  })
  .superRefine((t, ctx) => {
    if ((t.cert_file === '') !== (t.key_file === '')) {
      ctx.addIssue({ code: 'custom', path: [t.cert_file === '' ? 'cert_file' : 'key_file'], message: 'set both tls.cert_file and tls.key_file, or neither' });
    }
    if (t.client_ca_file !== '' && t.cert_file === '') {
      ctx.addIssue({ code: 'custom', path: ['client_ca_file'], message: 'client certificates are asked for on TLS ports only: set tls.cert_file and tls.key_file too' });
    }
    if (t.admin_ports && t.cert_file === '') {
      ctx.addIssue({ code: 'custom', path: ['admin_ports'], message: 'admin ports are served over TLS with tls.cert_file: set tls.cert_file and tls.key_file too' });
    }
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
  max_active_series: z
    .number()
    .int()
    .nonnegative()
    .default(0)
    .describe(
      'Metric series (a metric name with its resource, scope and data point attributes, or a remote-write label set) a tenant may have active at once, across its datasets and every acceptor, as Mimir\'s per-user series limit: once it has this many, data points of a series it does not have yet are refused (OTLP: rejected in the partial success; remote write: 400 after storing the rest), while its active series keep being written. 0: unlimited. A tenant\'s settings.limits may override it.',
    ),
  active_series_window: duration('1h')
    .refine((ms) => ms > 0, 'must be longer than 0s')
    .describe(
    'A series counts as active for limits.max_active_series until it has taken no data point for this long. A tenant\'s settings.limits may override it.',
  ),
  metrics_generator_processors: z
    .array(z.enum(['span_metrics', 'service_graphs']))
    .default(['span_metrics', 'service_graphs'])
    .describe(
      'What the metrics generator (metrics_generator.enabled) derives from a tenant\'s spans: span_metrics (traces_spanmetrics_calls_total and traces_spanmetrics_latency by service, span_name, span_kind, status_code), service_graphs (traces_service_graph_request_total, _failed_total and the client and server latency histograms by client, server, connection_type); [] none. A tenant\'s settings.limits may override it, as Tempo\'s per-tenant metrics_generator_processors.',
    ),
  ruler_max_rule_groups_per_tenant: z
    .number()
    .int()
    .positive()
    .default(100)
    .describe('Rule groups a tenant may have per query language (PromQL, LogQL), as Mimir\'s limit of that name; more is 400. A tenant\'s settings.limits may override it.'),
  ruler_max_rules_per_rule_group: z
    .number()
    .int()
    .positive()
    .default(100)
    .describe('Rules one rule group of a tenant may hold, as Mimir\'s limit of that name; more is 400. A tenant\'s settings.limits may override it.'),
  ingest_max_age: duration('7d').describe(
    'Rows whose time (a span\'s start, a log record\'s or a data point\'s time, a profile\'s) lies further in the past than this are refused at ingest (OTLP: rejected in the partial success; remote write: 400 after storing the rest), so a client with a broken clock cannot scatter a request over thousands of hour partitions. 0s: any age. A tenant\'s settings.limits may override it (e.g. for a backfill).',
  ),
  ingest_max_future: duration('10m').describe(
    'Rows whose time lies further in the future than this are refused at ingest, like ingest_max_age (such rows would sit in partitions that retention never reaches). 0s: any time. A tenant\'s settings.limits may override it.',
  ),
  retention: duration('0s').describe(
    'How long data is kept (0s: forever). The compactor deletes each hour partition once all of it is older than this, so data goes up to an hour plus a compactor.interval after it expires; its files are deleted from storage when the deleting snapshot expires (compactor.snapshot_retention). A tenant\'s settings.limits.retention (a duration text such as "30d") overrides it.',
  ),
  retention_by_table: z
    .strictObject({
      traces: optionalDuration().describe('Retention of traces tables (unset: limits.retention).'),
      logs: optionalDuration().describe('Retention of logs tables (unset: limits.retention).'),
      metrics: optionalDuration().describe('Retention of metrics tables (unset: limits.retention).'),
      metric_exemplars: optionalDuration().describe('Retention of metric_exemplars tables (unset: limits.retention).'),
      profiles: optionalDuration().describe('Retention of profiles tables (unset: limits.retention).'),
    })
    .prefault({})
    .describe('Per-table retention. A tenant\'s settings.limits.retention_by_table overrides it per table, and a tenant\'s own settings come before the instance\'s: the tenant\'s per-table value, its retention, this, then limits.retention.'),
  retention_stream: z
    .array(
      z.strictObject({
        selector: z.string().min(1).describe('LogQL stream selector, such as {service_name="debug"} or {k8s.namespace.name=~"dev-.*"}.'),
        priority: z.number().int().default(0).describe('Among rules that match a stream, the highest priority wins.'),
        period: z
          .union([z.string(), z.number()])
          .transform(toMs)
          .refine((ms) => ms > 0, 'must be longer than 0s')
          .meta({ format: 'duration' })
          .describe('How long the matching log lines are kept; longer or shorter than the logs retention.'),
      }),
    )
    .default([])
    .describe(
      'Per-stream retention of logs, as Loki\'s retention_stream: a log line is kept for the period of the first rule that matches its stream, looking at the tenant\'s settings.limits.retention_stream by priority, then these by priority; lines no rule matches keep the logs retention. The compactor deletes lines an hour at a time once the whole hour is past their period, rewriting the files that hold them.',
    ),
});

// Spec 1 "Self-profiling" and spec 2 "Events": Floe's own spans, metrics and CPU profiles, stored
// as telemetry of the tenant _system (dataset _monitoring) through an acceptor.
export const selfMonitoringSection = z.strictObject({
  enabled: z.boolean().default(false).describe('Emit Floe\'s own spans (router HTTP routes) and metrics (writer, acceptor) as OTLP into tenant _system, dataset _monitoring. Requires auth.admin_api_key.'),
  environment: z.string().min(1).default('production').describe('deployment.environment.name of the emitted telemetry.'),
  endpoint: z.string().default('').describe('OTLP/HTTP base URL the telemetry is sent to. Empty: the acceptor of this process, else http://127.0.0.1:<acceptor.http_port> (https with tls).'),
  export_interval: duration('30s').describe('How often spans and metrics are exported.'),
  metrics_endpoint: z
    .boolean()
    .default(true)
    .describe(
      "Serve GET /metrics on every service's HTTP port (router, acceptor, and the admin ports of writer, querier and compactor): the process's metrics in the Prometheus text format, for a Prometheus outside Floe to scrape. Independent of enabled. Names as Floe's PromQL gives OTLP metrics (http_server_request_duration_seconds, items_accepted_total, wal_backlog_segments, …); deploy/prometheus/floe-alerts.yaml and deploy/grafana/dashboards/floe-operations.json use them.",
    ),
  metrics_bearer_token: z
    .string()
    .default('')
    .describe('When set, GET /metrics answers only requests with Authorization: Bearer <this token> (401 otherwise); a scrape config passes it as authorization.credentials. Empty: open, as Loki, Tempo and Mimir serve theirs (tenant ids appear in labels; keep the ports off the public network or set a token).'),
  profiles_enabled: z.boolean().default(false).describe('Profile this process\'s CPU and store one profile per profile_interval under tenant _system (works without enabled). Requires auth.admin_api_key.'),
  profile_sample_rate_hz: z.number().positive().max(10_000).default(99).describe('CPU sampling frequency of self-profiling.'),
  profile_interval: duration('60s').describe('One CPU profile per window of this length.'),
  heap_profiles_enabled: z
    .boolean()
    .default(false)
    .describe(
      'Also export a live-heap profile per window, in the same request as the CPU profile: sample type inuse_space (the estimated bytes still alive of the allocations V8\'s sampling heap profiler sampled since profiling started, one sample per 512 KiB allocated on average), period type space/bytes. The sampler is part of every Node build and this setting alone switches it on (no environment variable); if it cannot be started, a warning is logged and no heap profile is exported. Takes effect only with profiles_enabled, and not when profiling.enabled wins (heap profiles are never sent to the external backend).',
    ),
});

// Spec 1 "Self-profiling": the same CPU profiles sent to an external profiling backend instead of
// tenant _system. The backend is someone else's, so it gets its own credentials (headers) and
// needs no admin key.
export const profilingSection = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe('Continuously profile this process\'s CPU and send one OTLP profile per interval to an external profiling backend (Grafana Pyroscope, an OpenTelemetry Collector, anything that accepts OTLP profiles at POST {endpoint}/v1development/profiles). Wins over self_monitoring.profiles_enabled: with both on, no CPU profiles are stored under tenant _system and a warning is logged at start. Needs no auth.admin_api_key.'),
    endpoint: z.string().default('').describe('OTLP/HTTP base URL of the backend, without the /v1development/profiles path, e.g. http://pyroscope:4040 or http://otel-collector:4318. Required when enabled.'),
    headers: z
      // YAML and the environment read a bare number (an org id) as a number; a header value is text.
      .record(z.string(), z.union([z.string(), z.number()]).transform(String))
      .prefault({})
      .describe('HTTP headers sent with every export, as a map of header name to value, e.g. Authorization or X-Scope-OrgID for a multi-tenant backend. From the environment: one variable per header, e.g. FLOE__PROFILING__HEADERS__AUTHORIZATION.'),
    sample_rate_hz: z.number().positive().max(10_000).default(99).describe('CPU sampling frequency.'),
    interval: duration('60s').describe('One CPU profile is sent per window of this length.'),
  })
  .superRefine((p, ctx) => {
    const problem = (key: string, message: string) => ctx.addIssue({ code: 'custom', path: [key], message });
    if (!p.enabled) return;
    if (!p.endpoint) problem('endpoint', 'required when profiling.enabled');
    else if (!isHttpUrl(p.endpoint)) problem('endpoint', `not an http(s) URL without query or fragment: ${JSON.stringify(p.endpoint)}`);
  });

// Spec 2 (Source-control integration): a GitHub App with read-only contents and metadata. The
// section is optional as a whole: empty app_id, app_slug, keys and client credentials leave it unset
// (its endpoints answer 404); filling only some of them fails start naming each missing key.
const SCM_REQUIRED = ['app_id', 'app_slug', 'client_id', 'client_secret'] as const;
export const scmSection = z
  .strictObject({
    // YAML and FLOE__SCM__APP_ID read a bare number as a number; the host's app id is kept as text.
    app_id: z.union([z.string(), z.number()]).default('').transform(String).describe('Numeric id of the GitHub App.'),
    app_slug: z.string().default('').describe('URL name of the GitHub App (install links go to {web_url}/apps/{app_slug}/installations/new).'),
    private_key_path: z.string().default('').describe('File holding the app\'s PEM private key (PKCS#1 or PKCS#8). Exactly one of private_key_path and private_key.'),
    private_key: z.string().default('').describe('The app\'s PEM private key itself. Exactly one of private_key_path and private_key.'),
    client_id: z.string().default('').describe('OAuth client id of the GitHub App (the link callback exchanges the user\'s code with it).'),
    client_secret: z.string().default('').describe('OAuth client secret of the GitHub App.'),
    api_url: z.string().default('https://api.github.com').describe('REST API base URL of the host; for GitHub Enterprise Server https://<host>/api/v3.'),
    web_url: z.string().default('https://github.com').describe('Web URL of the host (install links, links into files).'),
    link_state_ttl: duration('10m').describe('How long a link started with scm-installations/link may take to come back through the callback.'),
    snippet_cache_ttl: duration('10m').describe('How long a fetched source file (or its content-caused unavailability) is served from memory.'),
    snippet_cache_capacity: z.number().int().positive().default(1000).describe('Most source files kept in memory (least recently used evicted).'),
    requests_per_hour: z.number().int().positive().default(5000).describe('Requests Floe makes with one installation\'s token per hour, shared by every router (through Redis with limits.store redis); beyond it lookups answer scm_error and listings serve their last known repositories until the budget refills. The host\'s own rate-limit answer stops requests until its reset as well.'),
  })
  .superRefine((s, ctx) => {
    const keys = [...SCM_REQUIRED, 'private_key_path', 'private_key'] as const;
    if (keys.every((k) => s[k] === '')) return;
    for (const k of SCM_REQUIRED) if (s[k] === '') ctx.addIssue({ code: 'custom', path: [k], message: 'required when the scm section is set' });
    if ((s.private_key_path === '') === (s.private_key === '')) {
      ctx.addIssue({ code: 'custom', path: ['private_key_path'], message: 'set exactly one of scm.private_key_path and scm.private_key' });
    }
  });

// Tempo's metrics-generator: RED metrics and service-graph edges derived from ingested spans,
// written as ordinary metrics of the spans' own dataset, for Grafana's service graph.
export const metricsGeneratorSection = z.strictObject({
  enabled: z.boolean().default(false).describe('Derive metrics from ingested spans, as Tempo\'s metrics-generator does, into the metrics table of the spans\' dataset (each acceptor keeps its own counters and labels them with its instance); which ones, per tenant: limits.metrics_generator_processors.'),
  collection_interval: duration('15s').refine((ms) => ms >= 1000, 'must be at least 1s').describe('How often the counters are written (one point per series each time).'),
  histogram_buckets: z
    .array(z.number().positive())
    .min(1)
    .default([0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384])
    .refine((b) => b.every((x, i) => i === 0 || x > b[i - 1]!), 'must be ascending')
    .describe('Upper bounds (seconds) of the latency histograms\' buckets.'),
  dimensions: z.array(z.string().min(1)).max(16).default([]).describe('Span or resource attributes added as labels of the span metrics (dots become underscores, as Tempo names them).'),
  service_graph_wait: duration('10s').describe('How long a client or server span waits for its other half before it counts as unpaired.'),
  max_series: z.number().int().positive().default(10_000).describe('Series the generator keeps per dataset and processor; spans of further new series are not counted (traces_spanmetrics_dropped_spans / traces_service_graph_dropped_spans count them).'),
  max_pending_edges: z.number().int().positive().default(10_000).describe('Client and server spans a dataset may hold waiting for their other half; beyond it they are dropped.'),
});

// The ruler: Prometheus recording and alerting rules per tenant and dataset, evaluated by one
// router at a time (a lease in the metadata DB), as Mimir's and Loki's rulers do.
export const rulerSection = z.strictObject({
  enabled: z.boolean().default(true).describe('Evaluate the tenants\' rule groups on this router (one router of a cluster at a time: a lease in the metadata DB decides which). False: the rules API still stores and lists rules, but this router never evaluates them.'),
  evaluation_interval: duration('1m').refine((ms) => ms >= 1000, 'must be at least 1s').describe('How often a group is evaluated when it names no interval of its own (Prometheus\'s global evaluation_interval).'),
  poll_interval: duration('10s').refine((ms) => ms >= 100, 'must be at least 100ms').describe('How often the evaluating router reloads rule groups from the metadata DB and renews its lease (the lease lasts three of these).'),
  query_offset: duration('0s').describe('How far in the past a group without its own query_offset evaluates (Prometheus\'s rule_query_offset), so that samples still on their way into storage are not missed.'),
  remote_write_url: z.string().default('').describe('Where recording-rule results and the ALERTS series are written: an acceptor\'s Prometheus remote-write URL (http://acceptor:4318/api/v1/write), with auth.internal_service_key as the credential. Empty: the acceptor of this process in `floe all`, else http://127.0.0.1:<acceptor.http_port>/api/v1/write (https with tls).'),
  alertmanager_urls: z.array(z.string().url()).default([]).describe('Alertmanagers that firing and resolved alerts are sent to (POST <url>/api/v2/alerts, X-Scope-OrgID naming the tenant), each of them, as Prometheus does for an HA pair. Empty: alerts are only listed by /api/v1/alerts and written as the ALERTS series.'),
  resend_delay: duration('1m').describe('How often a firing alert is sent to the Alertmanagers again (Prometheus --rules.alert.resend-delay).'),
  for_outage_tolerance: duration('1h').describe('How long evaluation may have stopped (a restart, a new evaluating router) before pending and firing alerts start their `for` over instead of being restored (Prometheus --rules.alert.for-outage-tolerance).'),
  external_labels: z.record(z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/), z.string()).default({}).describe('Labels added to every alert sent to the Alertmanagers (Prometheus\'s global external_labels); templates see them as $externalLabels.'),
});

export const floeConfigSchema = z.strictObject({
  log: logSection.prefault({}),
  runtime: runtimeSection.prefault({}),
  tls: tlsSection.prefault({}),
  meta: metaSection.prefault({}),
  storage: storageSection.prefault({}),
  auth: authSection.prefault({}),
  demo: demoSection.prefault({}),
  acceptor: acceptorSection.prefault({}),
  writer: writerSection.prefault({}),
  querier: querierSection.prefault({}),
  compactor: compactorSection.prefault({}),
  router: routerSection.prefault({}),
  public: publicSection.prefault({}),
  planning: planningSection.prefault({}),
  schema: schemaSection.prefault({}),
  limits: limitsSection.prefault({}),
  scm: scmSection.prefault({}),
  self_monitoring: selfMonitoringSection.prefault({}),
  profiling: profilingSection.prefault({}),
  metrics_generator: metricsGeneratorSection.prefault({}),
  ruler: rulerSection.prefault({}),
});

export type FloeConfig = z.output<typeof floeConfigSchema>;
export type FloeConfigInput = z.input<typeof floeConfigSchema>;

export { formatDurationMs };
