import type { FloeConfig } from '@floe/config';
import { getDataset, normaliseEmail, provisionDemoUser, type Db } from '@floe/meta';
import type { Logger } from '@floe/telemetry';
import { oidcRedirectUri } from './oidc-routes.ts';
import { startOidcDiscovery, type OidcRetry } from './oidc-provider.ts';
import type { SessionOptions } from './routes.ts';

export interface LoginSetup {
  login: Pick<SessionOptions, 'oidc' | 'passwordLoginDisabled' | 'demo'>;
  /** Whether an email is the configured demo user's (sessions report it as is_demo). */
  isDemoUser: (email: string) => boolean;
  close(): void;
}

/**
 * The router's sign-in setup at start: SSO discovery (never fatal: an unreachable provider is
 * retried in the background) and, while demo mode is on, the demo user's provisioning (never
 * fatal either: logged, and the router starts without it).
 */
export async function loginFromConfig(config: Readonly<FloeConfig>, db: Db, log: Logger, retry?: OidcRetry): Promise<LoginSetup> {
  const o = config.auth.oidc;
  const provider = o.issuer_url ? await startOidcDiscovery({ issuerUrl: o.issuer_url, clientId: o.client_id, clientSecret: o.client_secret, displayName: o.display_name }, log, retry) : undefined;
  const demo = config.demo;
  let demoEmail: string | undefined;
  if (demo.enabled) {
    demoEmail = normaliseEmail(demo.username);
    try {
      await provisionDemoUser(db, { email: demoEmail, password: demo.password, tenantId: demo.tenant_id });
      log.info({ tenant: demo.tenant_id, username: demoEmail }, 'demo account provisioned');
      if (demo.dataset_id && !(await getDataset(db, demo.tenant_id, demo.dataset_id))) {
        log.warn({ tenant: demo.tenant_id, dataset: demo.dataset_id }, 'demo.dataset_id names no dataset of demo.tenant_id: the login page offers it anyway');
      }
    } catch (err) {
      log.error({ err: err instanceof Error ? err.message : String(err), tenant: demo.tenant_id }, 'demo account provisioning failed');
    }
  }
  return {
    login: {
      oidc: provider && {
        provider,
        clientSecret: o.client_secret,
        redirectUri: oidcRedirectUri(config.public.api_url, o.redirect_url),
        groupClaim: o.group_claim,
        allowedEmailDomains: o.allowed_email_domains,
        groupMappings: o.group_mappings,
      },
      passwordLoginDisabled: o.disable_password_login,
      demo: demo.enabled ? { username: demo.username, password: demo.password, tenant_id: demo.tenant_id, ...(demo.dataset_id ? { dataset_id: demo.dataset_id } : {}) } : undefined,
    },
    isDemoUser: (email) => demoEmail !== undefined && email === demoEmail,
    close: () => provider?.close(),
  };
}
