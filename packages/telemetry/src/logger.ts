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
 * A child for HTTP frameworks that log every request at info: per-request lines would drown
 * the service's own log, so the child only passes warnings and errors (unless debugging).
 */
export function quietChild(log: Logger, surface: string): Logger {
  const level = log.levelVal <= 20 ? log.level : 'warn';
  return log.child({ surface }, { level });
}
