/**
 * @floe/telemetry: the process logger (pino, JSON lines). Every service takes a child logger
 * named after itself; request-scoped fields (tenant, dataset) are added by the caller.
 */
export { createLogger, quietChild, silentLogger } from './logger.ts';
export type { Logger, LoggerOptions } from './logger.ts';
