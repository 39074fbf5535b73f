import type { Logger } from '@floe/telemetry';

/**
 * Runs `stop` once on SIGTERM/SIGINT, then exits; a second signal or the timeout forces exit.
 * Returns a function that removes the handlers (tests).
 */
export function onShutdownSignal(log: Logger, stop: () => Promise<void>, timeoutMs: number): () => void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'stopping');
    const timer = setTimeout(() => {
      log.error({ timeoutMs }, 'graceful stop timed out: exiting');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    stop().then(
      () => {
        log.info('stopped');
        log.flush?.();
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return () => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
