import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/rest';
import { BUDGET_HEADER, type InstallationBudget } from './budget.ts';
import type { ScmSettings } from './settings.ts';

/**
 * The one place that talks to the source-control host (GitHub or GitHub Enterprise Server, through
 * Octokit with baseUrl = scm.api_url). Everything else sees plain results: an installation, a
 * list of repository names, a file or the reason there is none. Failures of the host itself
 * (unreachable, 5xx, refused credentials, rate limit) are a HostError; callers turn it into
 * `scm_error`, a `stale` list or a callback redirect with reason `scm`.
 */

export class HostError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.name = 'HostError';
    this.status = status;
  }
}

export interface HostInstallation {
  id: number;
  account: { login: string; type: string };
  /** Permission name → `read`, `write` or `admin`. */
  permissions: Record<string, string>;
}

export type HostFile =
  | { kind: 'file'; bytes: Buffer; size: number; url: string }
  | { kind: 'not_found' }
  | { kind: 'not_a_file' }
  | { kind: 'too_large' };

export interface InstallationToken {
  token: string;
  expiresAt: Date;
}

export interface ScmHost {
  /** The installation as the app sees it (app JWT); undefined when the app has no such installation. */
  installation(installationId: number): Promise<HostInstallation | undefined>;
  /** Exchanges the OAuth code of the callback for the user's token and lists that user's installation ids. */
  userInstallationIds(code: string): Promise<number[]>;
  /** A new installation access token (app JWT); never cached here (see tokens.ts). */
  mintToken(installationId: number): Promise<InstallationToken>;
  /** owner/name of every repository the installation covers, in the host's order. */
  repositories(token: string): Promise<string[]>;
  /** One path at a ref (the default branch when ref is undefined); `maxBytes` bounds what is served. */
  file(token: string, repository: string, path: string, ref: string | undefined, maxBytes: number): Promise<HostFile>;
}

// A hung host must not hold a request (or the callback) for minutes; 10 s is well above the
// host's usual latency for these small calls.
const HOST_TIMEOUT_MS = 10_000;
const timedFetch: typeof fetch = (input, init) => fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(HOST_TIMEOUT_MS) });

// Octokit logs deprecation notes and request warnings to the console by default; the router's
// callers log what matters with tenant context instead.
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

// Octokit's own token cache keeps tokens for a fixed 59 minutes and cannot forget one installation;
// tokens.ts owns that policy (spec 2, source-context rule 7), so Octokit gets a cache that keeps nothing.
const NO_CACHE = { get: async () => undefined, set: async () => {} };

const statusOf = (err: unknown): number | undefined => {
  const s = (err as { status?: unknown }).status;
  return typeof s === 'number' ? s : undefined;
};

function hostError(what: string, err: unknown): HostError {
  if (err instanceof HostError) return err;
  const status = statusOf(err);
  const response = (err as { response?: { headers?: Record<string, string>; data?: { message?: unknown } } }).response;
  if (response?.headers?.[BUDGET_HEADER]) return new HostError(`${what}: not sent: ${String(response.data?.message ?? 'request budget spent')}`, status);
  return new HostError(`${what}: ${status ? `host answered ${status}` : (err as Error).message}`, status);
}

async function hostCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw hostError(what, err);
  }
}

/** `budget`: the installations' request budget (budget.ts), applied to every request made with an installation token. */
export function createScmHost(settings: ScmSettings, budget?: InstallationBudget): ScmHost {
  const common = { baseUrl: settings.apiUrl, request: { fetch: budget ? budget.wrap(timedFetch) : timedFetch }, log: silent };
  const app = new Octokit({
    ...common,
    authStrategy: createAppAuth,
    auth: { appId: settings.appId, privateKey: settings.privateKey, clientId: settings.clientId, clientSecret: settings.clientSecret, cache: NO_CACHE },
  });
  const as = (token: string) => new Octokit({ ...common, auth: token });

  return {
    async installation(installationId) {
      try {
        const { data } = await app.rest.apps.getInstallation({ installation_id: installationId });
        const account = (data.account ?? {}) as { login?: string; slug?: string; type?: string };
        return {
          id: data.id,
          account: { login: account.login ?? account.slug ?? '', type: account.type ?? 'Organization' },
          permissions: { ...(data.permissions as Record<string, string>) },
        };
      } catch (err) {
        if (statusOf(err) === 404) return undefined;
        throw hostError('read installation', err);
      }
    },

    userInstallationIds: (code) =>
      hostCall('exchange code', async () => {
        const user = (await app.auth({ type: 'oauth-user', code })) as { token: string };
        const octokit = as(user.token);
        const list = await octokit.paginate(octokit.rest.apps.listInstallationsForAuthenticatedUser, { per_page: 100 });
        return list.map((i) => i.id);
      }),

    mintToken: (installationId) =>
      hostCall('mint installation token', async () => {
        const t = (await app.auth({ type: 'installation', installationId })) as { token: string; expiresAt: string };
        return { token: t.token, expiresAt: new Date(t.expiresAt) };
      }),

    repositories: (token) =>
      hostCall('list repositories', async () => {
        const octokit = as(token);
        const repos = await octokit.paginate(octokit.rest.apps.listReposAccessibleToInstallation, { per_page: 100 });
        return repos.map((r) => r.full_name);
      }),

    async file(token, repository, path, ref, maxBytes) {
      const [owner, repo] = repository.split('/') as [string, string];
      let data: unknown;
      try {
        ({ data } = await as(token).rest.repos.getContent({ owner, repo, path, ...(ref !== undefined ? { ref } : {}) }));
      } catch (err) {
        if (statusOf(err) === 404) return { kind: 'not_found' };
        throw hostError(`read ${repository}/${path}`, err);
      }
      // A directory comes back as a list; submodules and symlinks the host could not resolve to a
      // file come back with their own type (spec 2, source-context rule 5).
      if (Array.isArray(data)) return { kind: 'not_a_file' };
      const entry = data as { type?: string; size?: number; content?: string; encoding?: string; html_url?: string | null };
      if (entry.type !== 'file') return { kind: 'not_a_file' };
      const size = entry.size ?? 0;
      if (size > maxBytes) return { kind: 'too_large' };
      if (entry.encoding !== 'base64' || typeof entry.content !== 'string') throw new HostError(`read ${repository}/${path}: unexpected encoding ${entry.encoding}`);
      const bytes = Buffer.from(entry.content, 'base64');
      if (bytes.length > maxBytes) return { kind: 'too_large' };
      return { kind: 'file', bytes, size, url: entry.html_url ?? `${repository}/${path}` };
    },
  };
}

/** Whether any permission goes beyond reading (spec 2, Linking security). */
export const hasWritePermission = (permissions: Record<string, string>) => Object.values(permissions).some((level) => level !== 'read');
