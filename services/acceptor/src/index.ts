/**
 * @floe/acceptor: OTLP ingest (gRPC 4317, HTTP 4318) of traces and logs. A request is
 * acknowledged only after its rows are in a durable write-ahead-log segment; the writer turns
 * segments into Iceberg commits.
 */
export { start } from './start.ts';
export type { SharedDeps } from './start.ts';
export { spansToRows } from './traces-to-rows.ts';
/** Protobuf trace exports straight to column-batch payloads (the acceptor's hot path; benchmarks use it alone). */
export { spansToPayloadsFromWire } from './traces-wire.ts';
export { logsToRows } from './logs-to-rows.ts';
export { profilesToRows } from './profiles-to-rows.ts';
export { remoteWriteV1BodyToRows } from './remote-write.ts';
/** A conversion's batch builders go back for reuse once finished, as ingest gives them back. */
export { releaseBuilder } from './rows.ts';
