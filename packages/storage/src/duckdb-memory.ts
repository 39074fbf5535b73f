import type { DuckDBConnection } from '@duckdb/node-api';
import { noSelfTelemetry, type SelfTelemetry } from '@floe/telemetry';

/** What one DuckDB instance holds, as its duckdb_memory() table function counts it. */
export interface DuckDbMemory {
  /** Bytes in memory, every tag together (bounded by the instance's memory_limit). */
  bytes: number;
  /** Bytes spilled to the instance's temp_directory. */
  tempBytes: number;
  /** The memory_limit the instance runs with, as DuckDB prints it ('1.8 GiB'); absent with no instance. */
  limit?: string;
}

/** An instance not created yet (or closed) holds nothing. */
export const NO_DUCKDB_MEMORY: DuckDbMemory = { bytes: 0, tempBytes: 0 };

/**
 * The memory of the instance `conn` belongs to. Meant for a connection of its own: on the one a
 * long COPY runs on, it would wait for the COPY.
 */
export async function readDuckDbMemory(conn: DuckDBConnection): Promise<DuckDbMemory> {
  const reader = await conn.runAndReadAll(
    "SELECT sum(memory_usage_bytes)::BIGINT, sum(temporary_storage_bytes)::BIGINT, current_setting('memory_limit') FROM duckdb_memory()",
  );
  const [bytes, tempBytes, limit] = reader.getRows()[0]! as [bigint | null, bigint | null, string];
  return { bytes: Number(bytes ?? 0n), tempBytes: Number(tempBytes ?? 0n), limit };
}

/**
 * A scrape waits this long for a reading; then it reports the last one. DuckDB runs its calls on
 * libuv's few threads, which long COPYs and queries may all be holding.
 */
const READ_WAIT_MS = 500;

/**
 * The gauges `duckdb_memory_bytes` and `duckdb_temporary_storage_bytes` of one DuckDB instance
 * (attribute `component`: writer, compactor or querier), read at each collection, so an operator
 * sees how much of a process's memory DuckDB holds against its memory_limit and what it spilled.
 * In `floe all` the three instances share the gauges, one series each.
 */
export function observeDuckDbMemory(telemetry: SelfTelemetry = noSelfTelemetry, component: string, read: () => Promise<DuckDbMemory>): void {
  const meter = telemetry.meter;
  const memory = meter.createObservableGauge('duckdb_memory', {
    description: 'Bytes a DuckDB instance of this process holds in memory (duckdb_memory()), by component: writer, compactor, querier (its shared instance, not the per-query ones)',
    unit: 'By',
  });
  const spilled = meter.createObservableGauge('duckdb_temporary_storage', {
    description: 'Bytes a DuckDB instance of this process has spilled to its temporary directory, by component',
    unit: 'By',
  });
  let last = NO_DUCKDB_MEMORY;
  let reading: Promise<DuckDbMemory> | undefined;
  meter.addBatchObservableCallback(
    async (r) => {
      // One reading at a time: a scrape that finds one still running reports the last value.
      reading ??= read()
        .then((m) => (last = m))
        .catch(() => last)
        .finally(() => (reading = undefined));
      let timer: NodeJS.Timeout | undefined;
      const now = await Promise.race([reading, new Promise<DuckDbMemory>((resolve) => (timer = setTimeout(() => resolve(last), READ_WAIT_MS)))]);
      clearTimeout(timer);
      r.observe(memory, now.bytes, { component });
      r.observe(spilled, now.tempBytes, { component });
    },
    [memory, spilled],
  );
}
