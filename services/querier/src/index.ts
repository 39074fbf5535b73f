/**
 * @floe/querier: Arrow Flight over locked-down DuckDB. A ticket is SQL text or
 * `{"sql","params","hints"}`; tables resolve through the Iceberg catalog to exact Parquet files.
 */
export { start } from './start.ts';
export type { QuerierHandle, SharedDeps } from './start.ts';
export { parseTicket } from './ticket.ts';
