import { ConfigError, loadConfig } from '@floe/config';
import { onShutdownSignal, sleep } from '@floe/runtime';
import { createLogger } from '@floe/telemetry';
import { start } from './start.ts';

// Runs the planning API on its own: config from --config / FLOE_CONFIG plus FLOE__* variables.
// On SIGTERM /ready turns 503 for runtime.shutdown_delay (load balancers drain), then the
// server closes after the requests in flight.
const flag = process.argv.indexOf('--config');
const file = flag >= 0 ? process.argv[flag + 1] : process.env.FLOE_CONFIG;
let config;
try {
  config = loadConfig({ file });
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`${err.message}\n`);
  process.exit(2);
}
const log = createLogger({ level: config.log.level });
try {
  const handle = await start(config, { log });
  const delay = config.runtime.shutdown_delay;
  onShutdownSignal(
    log,
    async () => {
      handle.drain?.();
      await sleep(delay);
      await handle.stop();
    },
    config.runtime.shutdown_timeout + delay,
  );
} catch (err) {
  log.fatal({ err }, 'planning failed to start');
  log.flush();
  process.exitCode = 1;
}
