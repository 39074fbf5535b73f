import { FloeError } from '@floe/errors';
import { ExportLogsServiceRequestSchema, ExportTraceServiceRequestSchema, fromBinary, type ExportLogsServiceRequest, type ExportTraceServiceRequest } from '@floe/proto';
import type { MetricsGenerator } from './metrics-generator.ts';
import type { TableName } from '@floe/schema';
import type { TenantContext } from '@floe/auth';
import { newRecordId, type WalAppender, type WalRecord } from '@floe/storage';
import type { Counter, Logger } from '@floe/telemetry';
import type { AcceptedTimes } from './accepted-times.ts';
import { logsToRows } from './logs-to-rows.ts';
import { logsToPayloadsFromWire } from './logs-wire.ts';
import type { ExportMetricsServiceRequest } from '@floe/proto';
import { metricsToRows, type ConvertedMetrics } from './metrics-to-rows.ts';
import type { ExportProfilesServiceRequest } from '@floe/proto';
import { profilesToRows } from './profiles-to-rows.ts';
import { payloadBuffers } from './payload-buffers.ts';
import { discardRows, releaseBuilder, takeBuilder, type ConvertedRows, type HourPayload, type RefusalCounts } from './rows.ts';
import type { SeriesGate, SeriesLimiter } from './series-limit.ts';
import { spansToRows } from './traces-to-rows.ts';
import { spanPartsOf, spansToPayloadsFromWire, type ConvertedPayloads } from './traces-wire.ts';
import { MAX_JSON_VALUES } from './decode.ts';

/** Spans, attributes, events and links of a protobuf trace export the metrics generator decodes (as MAX_JSON_VALUES bounds a JSON one). */
export const GENERATOR_MAX_PARTS = MAX_JSON_VALUES;

export interface IngestResult {
  accepted: number;
  rejected: number;
  rejectReason: string | undefined;
}

export interface IngestOptions {
  /** limits.max_active_series (absent: metric series are not limited). */
  series?: SeriesLimiter;
  /** Self-monitoring's items_refused: items not stored, by tenant, signal and reason (rows.ts RefusalKind). */
  itemsRefused?: Counter;
  /** Self-monitoring's items_accepted: items made durable, by tenant and signal. */
  itemsAccepted?: Counter;
  /** metrics_generator: counts the spans of stored trace exports (absent: off). */
  generator?: MetricsGenerator;
}

/**
 * Each hour's rows as one column batch payload: the rows written as columns, then the row
 * objects; or two, when the columns are series references (those batches hold nothing else).
 */
function hourPayloads(table: TableName, converted: ConvertedRows): HourPayload[] {
  const out: HourPayload[] = [];
  for (const b of converted.byHour.values()) {
    if (b.columns && b.columns.templates.length > 0) {
      const refs = b.columns;
      b.columns = undefined;
      // The templates outlive the builder (cleared for the next request): the appender reads them.
      out.push({ hour: b.hour, rows: refs.rows, payload: refs.finish(payloadBuffers.take), series: refs.templates.slice() });
      releaseBuilder(table, refs);
    }
    if (b.items.length === 0 && !b.columns) continue;
    const batch = b.columns ?? takeBuilder(table);
    b.columns = undefined;
    for (const row of b.items) batch.addRow(row);
    out.push({ hour: b.hour, rows: batch.rows, payload: batch.finish(payloadBuffers.take) });
    releaseBuilder(table, batch);
  }
  return out;
}

/**
 * The part of ingest shared by gRPC and HTTP and by every signal: rows → one WAL record per
 * (table, hour), all in one append so a request lands in a single segment (all or nothing).
 * Resolves only once that segment is durable; a failed append is `unavailable` (503 /
 * UNAVAILABLE), which clients retry.
 */
export class Ingest {
  private readonly wal: WalAppender;
  private readonly log: Logger;
  private readonly series: SeriesLimiter | undefined;
  private readonly itemsRefused: Counter | undefined;
  private readonly itemsAccepted: Counter | undefined;
  private readonly generator: MetricsGenerator | undefined;

  constructor(wal: WalAppender, log: Logger, opts: IngestOptions = {}) {
    this.wal = wal;
    this.log = log;
    this.series = opts.series;
    this.itemsRefused = opts.itemsRefused;
    this.itemsAccepted = opts.itemsAccepted;
    this.generator = opts.generator;
  }

  /** A decoded trace export (OTLP/JSON bodies). */
  async traces(ctx: TenantContext, req: ExportTraceServiceRequest, times: AcceptedTimes): Promise<IngestResult> {
    const result = await this.storeRows(ctx, 'traces', spansToRows(req, times));
    if (this.generator) await this.observeSpans(ctx, () => req, times);
    return result;
  }

  /**
   * A protobuf trace export, transcoded straight from the wire bytes (traces-wire.ts): the same
   * records as `traces(ctx, fromBinary(…))` without building the message. Malformed bytes are
   * `bad_data`.
   */
  async tracesProtobuf(ctx: TenantContext, body: Uint8Array, times: AcceptedTimes): Promise<IngestResult> {
    let converted: ConvertedPayloads;
    try {
      converted = spansToPayloadsFromWire(body, times);
    } catch (err) {
      throw new FloeError('bad_data', `body is not a valid ${ExportTraceServiceRequestSchema.typeName} protobuf message: ${(err as Error).message}`, {
        code: 'FLOE_ERR_INGEST_DECODE',
      });
    }
    const result = await this.store(ctx, 'traces', converted.byHour.values(), converted);
    // The generator reads spans as messages: only when it is on is the body decoded again, and
    // only a body whose messages fit in memory (a 60 KB gzip body of 32 million empty events,
    // decoded, took the acceptor past its heap and aborted it). A larger one is stored uncounted.
    if (this.generator) {
      const parts = spanPartsOf(body);
      if (parts <= GENERATOR_MAX_PARTS) await this.observeSpans(ctx, () => fromBinary(ExportTraceServiceRequestSchema, body), times);
      else this.log.warn({ tenant: ctx.tenant, dataset: ctx.dataset, parts }, `metrics generator: spans not counted, the request holds more than ${GENERATOR_MAX_PARTS} spans, attributes, events and links`);
    }
    return result;
  }

  /** A decoded logs export (protobuf or JSON). */
  async logs(ctx: TenantContext, req: ExportLogsServiceRequest, times: AcceptedTimes): Promise<IngestResult> {
    return this.storeRows(ctx, 'logs', logsToRows(req, undefined, times));
  }

  /**
   * A protobuf logs export, transcoded straight from the wire bytes (logs-wire.ts): the same
   * records as `logs(ctx, fromBinary(…))` without building the message. Malformed bytes are
   * `bad_data`.
   */
  async logsProtobuf(ctx: TenantContext, body: Uint8Array, times: AcceptedTimes): Promise<IngestResult> {
    let converted: ConvertedPayloads;
    try {
      converted = logsToPayloadsFromWire(body, undefined, times);
    } catch (err) {
      throw new FloeError('bad_data', `body is not a valid ${ExportLogsServiceRequestSchema.typeName} protobuf message: ${(err as Error).message}`, {
        code: 'FLOE_ERR_INGEST_DECODE',
      });
    }
    return this.store(ctx, 'logs', converted.byHour.values(), converted);
  }

  /** A decoded profiles export (protobuf or JSON). Accepted requests are logged at debug level only (spec 1, Ingest rule 6). */
  /** `names`: per resource, the profile name its sender gave (profilesToRows). */
  async profiles(ctx: TenantContext, req: ExportProfilesServiceRequest, times: AcceptedTimes, names?: readonly string[]): Promise<IngestResult> {
    const result = await this.storeRows(ctx, 'profiles', profilesToRows(req, undefined, undefined, times, names));
    this.log.debug({ tenant: ctx.tenant, dataset: ctx.dataset, profiles: result.accepted, rejected: result.rejected }, 'profiles accepted');
    return result;
  }

  /** A decoded metrics export (protobuf or JSON): data points and their exemplars. */
  async metrics(ctx: TenantContext, req: ExportMetricsServiceRequest, times: AcceptedTimes): Promise<IngestResult> {
    return this.storeMetrics(ctx, await this.convertMetrics(ctx, (gate) => metricsToRows(req, times, gate)));
  }

  /**
   * A metrics conversion (OTLP or remote write) under the tenant's active-series limit: `convert`
   * is given the series it may write, and may run twice (series-limit.ts).
   */
  async convertMetrics<T extends ConvertedMetrics>(ctx: TenantContext, convert: (series: SeriesGate | undefined) => T): Promise<T> {
    if (!this.series) return convert(undefined);
    return this.series.convert(ctx, convert, (c) => {
      discardRows('metrics', c.points);
      discardRows('metric_exemplars', c.exemplars);
    });
  }

  /**
   * Metric rows and their exemplars (OTLP or Prometheus remote write): the records of both
   * tables go in one append, so a request is stored whole or not at all. Counts are data points.
   */
  async storeMetrics(ctx: TenantContext, converted: ConvertedMetrics): Promise<IngestResult> {
    const records: WalRecord[] = [];
    for (const [table, rows] of [['metrics', converted.points], ['metric_exemplars', converted.exemplars]] as const) {
      for (const b of hourPayloads(table, rows)) {
        records.push({ header: { tenant: ctx.tenant, dataset: ctx.dataset, table, hour: b.hour, rows: b.rows, id: newRecordId() }, payload: b.payload, ...(b.series ? { series: b.series } : {}) });
      }
    }
    if (records.length > 0) await this.append(records);
    const { accepted, rejected, rejectReason } = converted.points;
    this.countItems(ctx, 'metrics', accepted, converted.points.refusedBy);
    return { accepted, rejected, rejectReason };
  }

  private storeRows(ctx: TenantContext, table: TableName, converted: ConvertedRows): Promise<IngestResult> {
    return this.store(ctx, table, hourPayloads(table, converted), converted);
  }

  /** Spans of a stored export for the metrics generator, whose failure never fails the request (its spans are stored). */
  private async observeSpans(ctx: TenantContext, req: () => ExportTraceServiceRequest, times: AcceptedTimes): Promise<void> {
    try {
      await this.generator!.observe(ctx, req, times);
    } catch (err) {
      this.log.debug({ err }, 'metrics generator: spans not counted');
    }
  }

  /** Records what a stored request kept and left out (after its append: a failed request stored nothing and refused nothing). */
  private countItems(ctx: TenantContext, signal: TableName, accepted: number, refusedBy: RefusalCounts): void {
    if (accepted > 0) this.itemsAccepted?.add(accepted, { 'tenant.id': ctx.tenant, 'dataset.id': ctx.dataset, signal });
    if (!this.itemsRefused) return;
    for (const [reason, n] of Object.entries(refusedBy)) {
      if (n > 0) this.itemsRefused.add(n, { 'tenant.id': ctx.tenant, 'dataset.id': ctx.dataset, signal, reason });
    }
  }

  private async store(ctx: TenantContext, table: TableName, batches: Iterable<HourPayload>, counts: IngestResult & { refusedBy: RefusalCounts }): Promise<IngestResult> {
    const records: WalRecord[] = [];
    for (const batch of batches) {
      records.push({
        header: { tenant: ctx.tenant, dataset: ctx.dataset, table, hour: batch.hour, rows: batch.rows, id: newRecordId() },
        payload: batch.payload,
      });
    }
    if (records.length > 0) await this.append(records);
    this.countItems(ctx, table, counts.accepted, counts.refusedBy);
    return { accepted: counts.accepted, rejected: counts.rejected, rejectReason: counts.rejectReason };
  }

  private async append(records: WalRecord[]): Promise<void> {
    try {
      await this.wal.append(records);
    } catch (err) {
      // The payloads are not given back: a failed PUT may still be reading them.
      this.log.error({ err }, 'WAL append failed');
      throw new FloeError('unavailable', 'write-ahead log unavailable, retry later', { code: 'FLOE_ERR_WAL_UNAVAILABLE', cause: err });
    }
    // Durable: nothing reads the payloads any more.
    for (const r of records) payloadBuffers.give(r.payload);
  }
}
