import pino, { type Logger } from 'pino';

export type { Logger };

export interface LoggerOptions {
  level: string;
  /** Component name recorded on every line (acceptor, writer, ...). */
  name?: string;
  /** Write to this file descriptor instead of stdout (tests use 2 to keep stdout for results). */
  fd?: number;
}

/** One JSON logger per process; services take a child with their name. */
export function createLogger(opts: LoggerOptions): Logger {
  return pino(
    {
      level: opts.level,
      base: { pid: process.pid, ...(opts.name ? { component: opts.name } : {}) },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ fd: opts.fd ?? 1, sync: false }),
  );
}

/** A logger that drops everything; for library code called without one. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * Logging options for an HTTP framework (fastify): its own per-request lines are off (they log
 * at info, and spec 1 wants e.g. accepted profile requests at debug only), and its child logger
 * passes only warnings and errors unless the service is debugging. Register
 * `requestCompletedAtDebug` as an onResponse hook when debugging to get one line per request.
 */
export function httpFrameworkLogging(log: Logger, surface: string): { loggerInstance: Logger; disableRequestLogging: true } {
  const level = log.levelVal <= 20 ? log.level : 'warn';
  return { loggerInstance: log.child({ surface }, { level }), disableRequestLogging: true };
}

interface CompletedRequest {
  method: string;
  url: string;
  log: Logger;
  routeOptions?: { url?: string };
}

/**
 * One debug line per answered request. The query string is left out: it can carry a login
 * callback's code or a user's query text, neither of which belongs in a log.
 */
export async function requestCompletedAtDebug(req: CompletedRequest, reply: { statusCode: number; elapsedTime: number }): Promise<void> {
  const q = req.url.indexOf('?');
  req.log.debug(
    { method: req.method, path: q < 0 ? req.url : req.url.slice(0, q), route: req.routeOptions?.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
    'request completed',
  );
}
