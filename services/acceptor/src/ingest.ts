import { FloeError } from '@floe/errors';
import { ExportTraceServiceRequestSchema, type ExportLogsServiceRequest, type ExportTraceServiceRequest } from '@floe/proto';
import type { TableName } from '@floe/schema';
import type { TenantContext } from '@floe/auth';
import { newRecordId, type WalAppender, type WalRecord } from '@floe/storage';
import type { Logger } from '@floe/telemetry';
import { logsToRows } from './logs-to-rows.ts';
import type { ConvertedRows } from './rows.ts';
import { spansToRows } from './traces-to-rows.ts';
import { spansToPayloadsFromWire, type ConvertedPayloads, type HourPayload } from './traces-wire.ts';

export interface IngestResult {
  accepted: number;
  rejected: number;
  rejectReason: string | undefined;
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

  constructor(wal: WalAppender, log: Logger) {
    this.wal = wal;
    this.log = log;
  }

  /** A decoded trace export (OTLP/JSON bodies). */
  async traces(ctx: TenantContext, req: ExportTraceServiceRequest): Promise<IngestResult> {
    return this.storeRows(ctx, 'traces', spansToRows(req));
  }

  /**
   * A protobuf trace export, transcoded straight from the wire bytes (traces-wire.ts): the same
   * records as `traces(ctx, fromBinary(…))` without building the message. Malformed bytes are
   * `bad_data`.
   */
  async tracesProtobuf(ctx: TenantContext, body: Uint8Array): Promise<IngestResult> {
    let converted: ConvertedPayloads;
    try {
      converted = spansToPayloadsFromWire(body);
    } catch (err) {
      throw new FloeError('bad_data', `body is not a valid ${ExportTraceServiceRequestSchema.typeName} protobuf message: ${(err as Error).message}`, {
        code: 'FLOE_ERR_INGEST_DECODE',
      });
    }
    return this.store(ctx, 'traces', converted.byHour.values(), converted);
  }

  /** A decoded logs export (protobuf or JSON). */
  async logs(ctx: TenantContext, req: ExportLogsServiceRequest): Promise<IngestResult> {
    return this.storeRows(ctx, 'logs', logsToRows(req));
  }

  private storeRows(ctx: TenantContext, table: TableName, converted: ConvertedRows): Promise<IngestResult> {
    const batches: HourPayload[] = [];
    for (const b of converted.byHour.values()) batches.push({ hour: b.hour, rows: b.rows, payload: Buffer.from(`${b.lines.join('\n')}\n`) });
    return this.store(ctx, table, batches, converted);
  }

  private async store(ctx: TenantContext, table: TableName, batches: Iterable<HourPayload>, counts: IngestResult): Promise<IngestResult> {
    const records: WalRecord[] = [];
    for (const batch of batches) {
      records.push({
        header: { tenant: ctx.tenant, dataset: ctx.dataset, table, hour: batch.hour, rows: batch.rows, id: newRecordId() },
        payload: batch.payload,
      });
    }
    if (records.length > 0) await this.append(records);
    return { accepted: counts.accepted, rejected: counts.rejected, rejectReason: counts.rejectReason };
  }

  private async append(records: WalRecord[]): Promise<void> {
    try {
      await this.wal.append(records);
    } catch (err) {
      this.log.error({ err }, 'WAL append failed');
      throw new FloeError('unavailable', 'write-ahead log unavailable, retry later', { code: 'FLOE_ERR_WAL_UNAVAILABLE', cause: err });
    }
  }
}
