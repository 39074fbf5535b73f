import * as client from 'openid-client';
import type { Logger } from '@floe/telemetry';

/**
 * The SSO provider's state (spec 2, States: SSO provider). Discovery runs at start; while the
 * issuer is unreachable or its document invalid the provider is unavailable (the login
 * configuration reports no SSO, SSO start answers 503) and discovery is retried in the
 * background with a doubling delay, so the provider becomes available without a restart.
 */
export interface OidcProvider {
  readonly issuer: string;
  /** The name shown on the login page. */
  readonly name: string;
  /** The discovered client configuration, or undefined while unavailable. */
  current(): client.Configuration | undefined;
  close(): void;
}

export interface OidcRetry {
  /** First delay after a failed discovery (spec 2, Limits: 1 s). */
  initialMs: number;
  /** Longest delay between attempts (spec 2, Limits: 5 minutes). */
  maxMs: number;
}

export const OIDC_RETRY: OidcRetry = { initialMs: 1000, maxMs: 5 * 60_000 };

// A provider that accepts the connection and never answers must not hold up the router's start.
const DISCOVERY_TIMEOUT_S = 5;

export const nextRetryDelay = (previousMs: number | undefined, retry: OidcRetry) =>
  previousMs === undefined ? retry.initialMs : Math.min(previousMs * 2, retry.maxMs);

export async function startOidcDiscovery(
  settings: { issuerUrl: string; clientId: string; clientSecret: string; displayName: string },
  log: Logger,
  retry: OidcRetry = OIDC_RETRY,
): Promise<OidcProvider> {
  const issuer = new URL(settings.issuerUrl);
  let config: client.Configuration | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let delay: number | undefined;

  const discover = async () => {
    try {
      config = await client.discovery(issuer, settings.clientId, undefined, client.ClientSecretBasic(settings.clientSecret), {
        timeout: DISCOVERY_TIMEOUT_S,
        // An http issuer is the operator's explicit choice (a provider on loopback or inside the
        // cluster network); openid-client refuses it unless told.
        execute: issuer.protocol === 'http:' ? [client.allowInsecureRequests] : [],
      });
      if (delay !== undefined) log.info({ issuer: issuer.href }, 'SSO provider available');
    } catch (err) {
      delay = nextRetryDelay(delay, retry);
      log.error({ issuer: issuer.href, err: String(err), retry_in_ms: delay }, 'SSO provider unavailable: discovery failed');
      if (!closed) {
        timer = setTimeout(() => void discover(), delay);
        timer.unref();
      }
    }
  };
  await discover();
  return {
    // As configured, so the 503 names what the operator wrote.
    issuer: settings.issuerUrl,
    name: settings.displayName || issuer.host,
    current: () => config,
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}
