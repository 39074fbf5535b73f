import type { DuckDbMemory } from '@floe/storage';
import { authenticate, verifyTicketSignature, type AuthDeps, type TenantContext } from '@floe/auth';
import { FloeError } from '@floe/errors';
import { NS_PER_HOUR, emptyColumnsDdl, type TableDef } from '@floe/schema';
import type { Logger } from '@floe/telemetry';
import type { Table } from 'apache-arrow';
import type { CandidateFile, FileResolver, ResolvedFiles } from './file-resolver.ts';
import { FileSchemas } from './file-schemas.ts';
import { SandboxError, createTrustedRunner, describeSandboxedSelect, runSandboxedSelect, type SandboxResult, type SandboxView, type StatementDescription, type TrustedRunner } from './sandbox/index.ts';
import { PER_FILE_COLUMN } from '@floe/query';
import { mentions, tableRefs, type TableRef } from './table-refs.ts';
import { fileInside, fileListsKeyer, mergeLists, splitByFile, type FileLists, type ListsPart, type SeriesListsCache } from './series-lists.ts';
import { parseTicket, type PerFileQuery, type Ticket } from './ticket.ts';
import { createTimeBoundsExtractor, type ScanHints, type TimeBoundsExtractor } from './time-bounds.ts';
import { unreadableFileOf } from './unreadable-files.ts';

export interface QueryLimits {
  timeoutMs: number;
  memoryLimit: string;
  threads: number;
  maxRows: number;
  /** Arrow bytes one result may hold (querier.max_result_mb). */
  maxBytes: number;
  tempDir: string;
}

/** Files one per-file read of point lists takes at most (its rows are series × files). */
const FILES_PER_READ = 24;

const SANDBOX_KIND: Record<SandboxError['kind'], 'bad_data' | 'forbidden' | 'timeout' | 'execution' | 'canceled' | 'internal'> = {
  bad_sql: 'bad_data',
  forbidden: 'forbidden',
  timeout: 'timeout',
  too_large: 'execution',
  canceled: 'canceled',
  internal: 'internal',
};

/**
 * One Flight DoGet: authenticate the caller from the gRPC metadata, parse the ticket, resolve
 * the tables the SQL names to the files their Iceberg snapshots select, and run the SQL in a
 * locked-down DuckDB made for this query. Every refusal is a FloeError with a clear message.
 */
export class QueryHandler {
  readonly #auth: AuthDeps;
  readonly #files: FileResolver;
  readonly #limits: QueryLimits;
  readonly #log: Logger;
  readonly #internalKey: string;
  /** Runs SQL that Floe printed: signed planner tickets and the querier's own (trace lookups). */
  readonly #trusted: TrustedRunner;
  readonly #schemas: FileSchemas;
  readonly #seriesLists: SeriesListsCache | undefined;
  /** What the point lists did since start (the admin port's /status). */
  readonly #listsDone = { queries_from_lists: 0, files_from_lists: 0, files_read: 0 };

  constructor(auth: AuthDeps, files: FileResolver, limits: QueryLimits, log: Logger, internalKey = '', seriesLists?: SeriesListsCache) {
    this.#seriesLists = seriesLists;
    this.#auth = auth;
    this.#files = files;
    this.#limits = limits;
    this.#log = log;
    this.#internalKey = internalKey;
    this.#trusted = createTrustedRunner({ threads: limits.threads, memoryLimit: limits.memoryLimit });
    this.#schemas = new FileSchemas((paths, timeoutMs) => this.#trusted.schemaKeys(paths, timeoutMs));
  }

  #bounds: Promise<TimeBoundsExtractor> | undefined;

  /** The point lists' state (`GET /status` of the admin port): kept files and bytes, and counts since start. */
  seriesListsStatus(): Record<string, number> | undefined {
    const cache = this.#seriesLists;
    if (!cache) return undefined;
    const kept = cache.kept;
    return { kept_files: kept.files, kept_bytes: kept.bytes, max_bytes: kept.maxBytes, ...this.#listsDone };
  }

  close(): void {
    this.#trusted.close();
    void this.#bounds?.then((b) => b.close());
  }

  /**
   * For SQL without hints: hour-partition pruning from the time predicates of the parsed SQL, and
   * the file order from its ORDER BY … LIMIT.
   */
  async #scanHints(sql: string, params: unknown[]): Promise<ScanHints> {
    // DuckDB reads zone-less timestamps in the host's zone, so those bounds are widened by a day.
    this.#bounds ??= createTimeBoundsExtractor({ sessionTimeZoneIsUtc: false });
    try {
      return await (await this.#bounds).scanHints(sql, params);
    } catch (err) {
      this.#log.warn({ err }, 'time bounds extraction failed; scanning every partition');
      return { bounds: new Map() };
    }
  }

  /** What the warm instance's DuckDB holds now (the duckdb_memory_bytes gauge). */
  duckdbMemory(): Promise<DuckDbMemory> {
    return this.#trusted.memoryUsage();
  }

  /** SQL the querier printed itself, over views it resolved itself, on the warm instance. */
  async runInternal(o: { views: SandboxView[]; sql: string; params: unknown[]; timeoutMs: number; signal?: AbortSignal }): Promise<SandboxResult> {
    const started = Date.now();
    try {
      return await this.#trusted.run({ ...o, views: await this.#withSchemas(o.views, o.timeoutMs), maxRows: this.#limits.maxRows, maxBytes: this.#limits.maxBytes });
    } catch (err) {
      throw await this.#readFailure(err, o.views.flatMap((v) => v.files), () => Math.max(1, o.timeoutMs - (Date.now() - started)));
    }
  }

  /** The views, each marked whether its files share one schema (scanned without matching columns by name). */
  #withSchemas(views: SandboxView[], timeoutMs: number): Promise<SandboxView[]> {
    return Promise.all(views.map(async (v) => ({ ...v, sameSchema: await this.#schemas.same(v.files, timeoutMs) })));
  }

  /**
   * A failed read over leased files (their paths): one of them that cannot be read refuses the
   * query as unavailable, naming its table and itself (unreadable-files.ts); anything else is
   * answered as #asFloeError says. Called while the files are still leased.
   */
  async #readFailure(err: unknown, paths: readonly string[], leftMs: () => number): Promise<unknown> {
    const found = await unreadableFileOf(err, paths, (path, timeoutMs) => this.#trusted.scanFile(path, timeoutMs), leftMs);
    const file = found && this.#files.fileAt(found.path);
    return file ? this.#files.unreadable(file, found.missing, err) : this.#asFloeError(err);
  }

  #asFloeError(err: unknown): unknown {
    if (!(err instanceof SandboxError)) return err;
    const kind = SANDBOX_KIND[err.kind];
    if (kind === 'internal') this.#log.error({ err }, 'sandbox fault');
    return new FloeError(kind, kind === 'internal' ? 'query failed' : kind === 'timeout' ? 'query timed out' : err.message, { cause: err });
  }

  /**
   * A signed point-lists query answered from per-file lists (series-lists.ts): the lists of each
   * file of the window from the cache, or by the planner's per-file query for the files not kept
   * yet (then kept), cut to the window. Only the files read are fetched (from S3, into the local
   * cache). A first read of a window costs more than the query as it is (whole files, grouped by
   * file too: bench/RESULTS.md); later reads of it cost only the files new since. Undefined when
   * a file's times are unknown or before 1970, or a read came back cut at max_result_rows though
   * it held one file: the caller then runs the query as it is. A cache too small for a read still
   * answers it (from what it held at the start and what was read).
   */
  async #fromFileLists(
    ctx: TenantContext,
    ticket: Ticket,
    ref: TableRef,
    budgetMs: number,
    started: number,
  ): Promise<{ table: Table; files: number; kept: number; read: number } | undefined> {
    const cache = this.#seriesLists;
    const perFile = ticket.hints.perFile;
    const { startNs, endNs } = ticket.hints;
    if (!cache || !perFile || startNs === undefined || endNs === undefined) return undefined;
    const { files, def } = await this.#files.candidates(ref.tenant, ref.dataset, ref.table, ticket.hints);
    if (files.some((f) => f.time === undefined || f.time.first < 0n)) return undefined;
    const keyOf = fileListsKeyer(`${ctx.tenant}\u0000${ctx.dataset}`, perFile.sql, perFile.params);
    // What the cache holds now is taken now: the lists this read adds may evict some of it.
    const read = new Map<string, FileLists>();
    const missing: CandidateFile[] = [];
    for (const f of files) {
      const lists = cache.get(keyOf(f.key));
      if (lists) read.set(f.key, lists);
      else missing.push(f);
    }
    const lists = await this.#readFileLists(ref, def, perFile, missing, () => Math.max(1, budgetMs - (Date.now() - started)));
    if (!lists) return undefined;
    for (const f of missing) {
      read.set(f.key, lists.get(f.key)!);
      cache.set(keyOf(f.key), lists.get(f.key)!);
    }
    // Oldest first, so a series' lists come as runs in time order.
    const parts: ListsPart[] = [...files]
      .sort((a, b) => (a.time!.first < b.time!.first ? -1 : a.time!.first > b.time!.first ? 1 : 0))
      .map((f) => ({ lists: read.get(f.key)!, inside: fileInside(f.time, startNs, endNs) }));
    const done = this.#listsDone;
    done.queries_from_lists++;
    done.files_from_lists += files.length - missing.length;
    done.files_read += missing.length;
    return { table: mergeLists(parts, startNs, endNs), files: files.length, kept: files.length - missing.length, read: missing.length };
  }

  /**
   * The lists of files by the per-file query, by object key: FILES_PER_READ files a read (its rows
   * are series × files), a read cut at max_result_rows read again as two halves. Undefined when
   * one file alone is cut so.
   */
  async #readFileLists(ref: TableRef, def: TableDef, perFile: PerFileQuery, files: CandidateFile[], leftMs: () => number): Promise<Map<string, FileLists> | undefined> {
    const out = new Map<string, FileLists>();
    if (files.length === 0) return out;
    const leased = await this.#files.lease(ref.dataset, ref.table, files);
    try {
      const all = files.map((file, i) => ({ file, path: leased.paths[i]! }));
      const batches: Array<typeof all> = [];
      for (let i = 0; i < all.length; i += FILES_PER_READ) batches.push(all.slice(i, i + FILES_PER_READ));
      for (let batch = batches.pop(); batch; batch = batches.pop()) {
        const [view] = await this.#withSchemas([{ name: ref.viewName, files: batch.map((b) => b.path), emptySchemaSql: emptyColumnsDdl(def), fileNames: true }], leftMs());
        const result = await this.#trusted.run({ views: [view!], sql: perFile.sql, params: perFile.params, timeoutMs: leftMs(), maxRows: this.#limits.maxRows, maxBytes: this.#limits.maxBytes });
        if (result.truncated) {
          if (batch.length === 1) return undefined;
          const half = Math.ceil(batch.length / 2);
          batches.push(batch.slice(0, half), batch.slice(half));
          continue;
        }
        const byPath = splitByFile(result.table, PER_FILE_COLUMN, batch.map((b) => ({ path: b.path, hourStartNs: (b.file.time!.first / NS_PER_HOUR) * NS_PER_HOUR })));
        for (const b of batch) out.set(b.file.key, byPath.get(b.path)!);
      }
      return out;
    } catch (err) {
      // A failure names the file by the batch's paths, known only while they are leased.
      throw await this.#readFailure(err, leased.paths, leftMs);
    } finally {
      leased.release();
    }
  }

  /** `tenantFromKey`: without X-Tenant-ID the key's own tenant (Flight SQL clients, which send only the token Handshake gave them). */
  authenticate(get: (name: string) => string | undefined, opts: { tenantFromKey?: boolean } = {}): Promise<TenantContext> {
    return authenticate({ authorization: get('authorization'), tenant: get('x-tenant-id'), dataset: get('x-dataset-id') }, this.#auth, 'query', opts);
  }

  /** `signal`: the caller went away; the query is interrupted. */
  async run(ctx: TenantContext, ticketBytes: Uint8Array, deadlineMs?: number, signal?: AbortSignal): Promise<Table> {
    return this.#runTicket(ctx, parseTicket(ticketBytes), deadlineMs, signal);
  }

  /** User SQL with values for its `$n` / `?` parameters (Flight SQL's bound prepared statements). */
  runStatement(ctx: TenantContext, sql: string, params: unknown[], deadlineMs?: number, signal?: AbortSignal): Promise<Table> {
    return this.#runTicket(ctx, { sql, params, hints: {}, rawHints: {}, sig: undefined }, deadlineMs, signal);
  }

  /**
   * User SQL planned, not run: its result columns and parameter types (Flight SQL's
   * CreatePreparedStatement, GetFlightInfo and GetSchema). The tables it names are typed empty views of their current schema,
   * so no data file is opened; the refusals are the run's (other tenants, files, settings).
   */
  async describeStatement(ctx: TenantContext, sql: string, deadlineMs?: number): Promise<StatementDescription> {
    const started = Date.now();
    const budgetMs = Math.min(this.#limits.timeoutMs, deadlineMs ?? Infinity);
    try {
      const views: SandboxView[] = [];
      for (const ref of tableRefs(sql, ctx).filter((r) => mentions(sql, r))) {
        views.push({ name: ref.viewName, files: [], emptySchemaSql: emptyColumnsDdl(await this.#files.tableDef(ref.tenant, ref.dataset, ref.table)) });
      }
      return await describeSandboxedSelect({
        views,
        sql,
        timeoutMs: Math.max(1, budgetMs - (Date.now() - started)),
        memoryLimit: this.#limits.memoryLimit,
        threads: this.#limits.threads,
        tempDir: this.#limits.tempDir,
      });
    } catch (err) {
      throw this.#asFloeError(err);
    }
  }

  async #runTicket(ctx: TenantContext, ticket: Ticket, deadlineMs?: number, signal?: AbortSignal): Promise<Table> {
    const started = Date.now();
    const refs = tableRefs(ticket.sql, ctx).filter((r) => mentions(ticket.sql, r));
    const resolved: ResolvedFiles[] = [];
    const budgetMs = Math.min(this.#limits.timeoutMs, deadlineMs ?? Infinity);
    // SQL printed and signed by Floe's planner runs on the warm instance (its views name only
    // the caller's files); anything a user typed gets a fresh locked-down sandbox.
    const signed =
      this.#internalKey !== '' &&
      refs.every((r) => !r.viewName.includes('.')) &&
      verifyTicketSignature(this.#internalKey, { tenant: ctx.tenant, dataset: ctx.dataset, sql: ticket.sql, params: ticket.params, hints: ticket.rawHints }, ticket.sig);
    try {
      if (signed && ticket.hints.perFile && refs.length === 1) {
        const lists = await this.#fromFileLists(ctx, ticket, refs[0]!, budgetMs, started);
        if (lists) {
          const { table, ...counts } = lists;
          this.#log.debug({ tenant: ctx.tenant, rows: table.numRows, ms: Date.now() - started, signed, lists: counts }, 'query');
          return table;
        }
      }
      const views = [];
      // One parse per query, not per table: hints from the planner win over parsing.
      const hinted = ticket.hints.startNs !== undefined || ticket.hints.endNs !== undefined;
      const parsed = hinted || refs.length === 0 ? undefined : await this.#scanHints(ticket.sql, ticket.params);
      const fileOrder = ticket.hints.fileOrder ?? parsed?.fileOrder;
      for (const ref of refs) {
        const bounds = parsed?.bounds.get(ref.viewName.toLowerCase());
        const hints = { ...ticket.hints, ...(bounds ? { startNs: bounds.minNs, endNs: bounds.maxNs } : {}), ...(fileOrder ? { fileOrder } : {}) };
        const files = await this.#files.files(ref.tenant, ref.dataset, ref.table, hints);
        resolved.push(files);
        views.push({ name: ref.viewName, files: files.paths, emptySchemaSql: emptyColumnsDdl(files.def) });
      }
      const resolvedAt = Date.now();
      const marked = await this.#withSchemas(views, Math.max(1, budgetMs - (Date.now() - started)));
      const timeoutMs = Math.max(1, budgetMs - (Date.now() - started));
      const run = signed ? (o: Parameters<typeof runSandboxedSelect>[0]) => this.#trusted.run(o) : runSandboxedSelect;
      const result = await run({
        views: marked,
        sql: ticket.sql,
        params: ticket.params,
        timeoutMs,
        memoryLimit: this.#limits.memoryLimit,
        threads: this.#limits.threads,
        maxRows: this.#limits.maxRows,
        maxBytes: this.#limits.maxBytes,
        tempDir: this.#limits.tempDir,
        ...(signal ? { signal } : {}),
      });
      this.#log.debug(
        { tenant: ctx.tenant, rows: result.rowCount, resolveMs: resolvedAt - started, ms: Date.now() - started, signed, files: resolved.map((r) => `${r.paths.length}/${r.considered}`) },
        'query',
      );
      return result.table;
    } catch (err) {
      throw await this.#readFailure(err, resolved.flatMap((r) => r.paths), () => Math.max(1, budgetMs - (Date.now() - started)));
    } finally {
      for (const r of resolved) r.release();
    }
  }
}
