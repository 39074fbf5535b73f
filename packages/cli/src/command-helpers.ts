import { Option, type Command } from 'commander';
import { ApiError, DEFAULT_TIMEOUT_MS, UnexpectedAnswer, type ConnectionOptions } from '@floe/client';

/**
 * What every command that talks to the router shares (management and query verbs): the
 * connection options and the exit convention — output on stdout and 0; the router's error, or
 * an answer not of the shape the command reads, on stderr and 1; a usage mistake on stderr and 2.
 */

export interface ConnectionFlags {
  url: string;
  apiKey?: string;
  /** Milliseconds, as typed (validated by connectionOf). */
  requestTimeout: string;
}

/** A mistake in the command line itself (exit code 2), as opposed to an answer from the router. */
export class UsageError extends Error {}

/** --url (env FLOE_URL), --api-key (env FLOE_API_KEY) and --request-timeout (env FLOE_REQUEST_TIMEOUT). */
export const withConnection = (cmd: Command, keyHelp = 'API key (env FLOE_API_KEY)') =>
  cmd
    .option('--url <url>', 'router URL (env FLOE_URL)', process.env.FLOE_URL ?? 'http://127.0.0.1:3000')
    // Help names the variable, never its value: the key is a secret.
    .addOption(new Option('--api-key <key>', keyHelp).default(process.env.FLOE_API_KEY, '$FLOE_API_KEY'))
    // Not --timeout: the PromQL verbs pass that to the router as the evaluation timeout.
    .option('--request-timeout <ms>', 'give up on a router that has not answered within this many milliseconds (env FLOE_REQUEST_TIMEOUT)', process.env.FLOE_REQUEST_TIMEOUT ?? String(DEFAULT_TIMEOUT_MS));

/** The client's connection from the command's flags; a --request-timeout that is not a positive number is a usage error. */
export function connectionOf(flags: ConnectionFlags, rest: Omit<ConnectionOptions, 'url' | 'apiKey' | 'timeoutMs'> = {}): ConnectionOptions {
  const timeoutMs = Number(flags.requestTimeout);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new UsageError(`--request-timeout must be a positive number of milliseconds, not ${JSON.stringify(flags.requestTimeout)}`);
  return { url: flags.url, apiKey: flags.apiKey, timeoutMs, ...rest };
}

export const tenantOption = (cmd: Command) => cmd.option('--tenant <id>', 'tenant id (env FLOE_TENANT)', process.env.FLOE_TENANT);

export function requireTenant(tenant: string | undefined): string {
  if (!tenant) throw new UsageError('--tenant (or FLOE_TENANT) is required');
  return tenant;
}

/** Runs one command: prints its output, or the router's error on stderr with exit code 1. */
export function action<A extends unknown[]>(name: string, run: (...args: A) => Promise<void>) {
  return async (...args: A) => {
    try {
      await run(...args);
    } catch (err) {
      if (err instanceof UsageError) {
        process.stderr.write(`floe ${name}: ${err.message}\n`);
        process.exitCode = 2;
        return;
      }
      if (err instanceof UnexpectedAnswer) {
        // Not the router's refusal but an answer this command cannot read (another version, a proxy, not Floe at all): the message names the path.
        process.stderr.write(`floe: ${err.message}\n`);
        process.exitCode = 1;
        return;
      }
      const detail = err instanceof ApiError ? `${err.message}${err.status ? ` (HTTP ${err.status} ${err.errorType})` : ''}` : (err as Error).message;
      process.stderr.write(`floe ${name}: ${detail}\n`);
      process.exitCode = 1;
    }
  };
}

/** Commander's collector for an option that may be given more than once. */
export const repeatable = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];
