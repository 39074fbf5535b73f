import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
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
 * Logging options for fastify: its child logger passes only warnings and errors unless the
 * service is debugging, and its per-request lines (at info by default; spec 1 wants e.g.
 * accepted profile requests logged at debug only) are one debug line per answered request.
 */
export function httpFrameworkLogging(log: Logger, surface: string): { loggerInstance: Logger; logController: LogController } {
  const level = log.levelVal <= 20 ? log.level : 'warn';
  return { loggerInstance: log.child({ surface }, { level }), logController: new DebugRequestLog() };
}

/** Fastify's request lines at debug. The query string is left out: it can carry a login callback's code or a user's query text. */
class DebugRequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, req: FastifyRequest, reply: FastifyReply): void {
    const line = { method: req.method, path: pathOf(req.url), route: req.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 };
    if (error) req.log.warn({ ...line, err: error }, 'request errored');
    else req.log.debug(line, 'request completed');
  }

  override routeNotFound(req: FastifyRequest): void {
    req.log.debug({ method: req.method, path: pathOf(req.url) }, 'route not found');
  }
}

const pathOf = (url: string): string => {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
};
