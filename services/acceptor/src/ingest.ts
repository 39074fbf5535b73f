import { FloeError } from '@floe/errors';
import type { ExportTraceServiceRequest } from '@floe/proto';
import type { TenantContext } from '@floe/auth';
import { newRecordId, type WalAppender, type WalRecord } from '@floe/storage';
import type { Logger } from '@floe/telemetry';
import { spansToRows } from './traces-to-rows.ts';

export interface IngestResult {
  accepted: number;
  rejected: number;
  rejectReason: string | undefined;
}

/**
 * The part of ingest shared by gRPC and HTTP: rows → one WAL record per (table, hour), all in one
 * append so a request lands in a single segment (all or nothing). Resolves only once that segment
 * is durable; a failed append is `unavailable` (503 / UNAVAILABLE), which clients retry.
 */
export class Ingest {
  private readonly wal: WalAppender;
  private readonly log: Logger;

  constructor(wal: WalAppender, log: Logger) {
    this.wal = wal;
    this.log = log;
  }

  async traces(ctx: TenantContext, req: ExportTraceServiceRequest): Promise<IngestResult> {
    const converted = spansToRows(req);
    const records: WalRecord[] = [];
    for (const batch of converted.byHour.values()) {
      records.push({
        header: { tenant: ctx.tenant, dataset: ctx.dataset, table: 'traces', hour: batch.hour, rows: batch.rows, id: newRecordId() },
        payload: Buffer.from(`${batch.lines.join('\n')}\n`),
      });
    }
    if (records.length > 0) await this.append(records);
    return { accepted: converted.accepted, rejected: converted.rejected, rejectReason: converted.rejectReason };
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
