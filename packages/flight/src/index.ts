export { closeFlightClients, FlightClientError, flightDoGet, flightGetFlightInfo } from './client.ts';
export type { FlightCallOptions } from './client.ts';
export { deliberateGrpcCode, grpcStatusFromError } from './errors.ts';
export { decodeFlightData, encodeFlightData, flightDataToIpc, ipcSchemaBytes, splitIpcStream } from './ipc-messages.ts';
export type { FlightSource, IpcMessage } from './ipc-messages.ts';
export { startFlightServer } from './server.ts';
export type { DoGetCall, DoGetStream, ExtraService, FlightHandlers, FlightServerHandle, FlightServerOptions } from './server.ts';
export { tableRows } from './table-rows.ts';
export { findTraceById } from './tempo-querier.ts';
