import type { ResolvedSession } from '@floe/auth';
import { consumeLinkState, createLinkState, getPendingLinkState, upsertScmInstallation, type ScmInstallation } from '@floe/meta';
import { HostError, hasWritePermission } from './host.ts';
import type { Scm } from './service.ts';

/**
 * Linking an installation to a tenant (spec 2, States and transitions; Linking security). The state
 * token proves which tenant asked and who started the flow; the host's OAuth code proves that the
 * browser's user controls the installation. Every check failure ends in one of five generic
 * reasons, never in a detail: the details go to the log.
 */

export const LINK_FAILURES = ['state', 'session', 'forbidden', 'scm', 'permissions'] as const;
export type LinkFailure = (typeof LINK_FAILURES)[number];

export interface LinkStarter {
  tenantId: string;
  /** The signed-in user who starts it; null when it is started with a key. */
  userId: string | null;
  /** principalLabel of the starter (linked_by of the installation). */
  startedBy: string;
}

export async function startLink(scm: Scm, starter: LinkStarter): Promise<{ installUrl: string; expiresAt: Date }> {
  const { token, expiresAt } = await createLinkState(scm.db, { ...starter, ttlMs: scm.settings.linkStateTtlMs });
  const url = new URL(`${scm.settings.webUrl}/apps/${encodeURIComponent(scm.settings.appSlug)}/installations/new`);
  url.searchParams.set('state', token);
  return { installUrl: url.toString(), expiresAt };
}

export interface CallbackInput {
  code: string | undefined;
  installationId: string | undefined;
  state: string | undefined;
  /** The browser's session, if its cookie names a live one. */
  session: ResolvedSession | undefined;
}

export type CallbackResult = { ok: true; installation: ScmInstallation } | { ok: false; reason: LinkFailure; detail: string };

const fail = (reason: LinkFailure, detail: string): CallbackResult => ({ ok: false, reason, detail });

/** Reads a host installation (id, account, permissions) and its repositories; undefined when the app has none. */
export async function readInstallation(scm: Scm, installationId: number) {
  const inst = await scm.host.installation(installationId);
  if (!inst) return undefined;
  const repositories = hasWritePermission(inst.permissions) ? [] : await scm.host.repositories(await scm.tokens.get(installationId));
  return { ...inst, repositories };
}

export async function completeLink(scm: Scm, input: CallbackInput): Promise<CallbackResult> {
  const state = input.state ?? '';
  const pending = await getPendingLinkState(scm.db, state);
  if (!pending) return fail('state', 'unknown, expired or spent state token');
  const session = input.session;
  if (!session) return fail('session', 'no browser session');
  if (pending.userId !== null) {
    if (session.user.id !== pending.userId) return fail('forbidden', `session user ${session.user.id} did not start this link`);
  } else if (!session.user.isInstanceAdmin && session.roles.get(pending.tenantId) !== 'admin') {
    return fail('forbidden', `session user ${session.user.id} is no admin of tenant ${pending.tenantId}`);
  }
  const installationId = /^[1-9][0-9]{0,15}$/.test(input.installationId ?? '') ? Number(input.installationId) : undefined;
  if (installationId === undefined || !input.code) return fail('scm', 'the host sent no code or installation id');

  let found: Awaited<ReturnType<typeof readInstallation>>;
  try {
    const mine = await scm.host.userInstallationIds(input.code);
    if (!mine.includes(installationId)) return fail('forbidden', `installation ${installationId} is not among the user's installations`);
    found = await readInstallation(scm, installationId);
  } catch (err) {
    if (err instanceof HostError) return fail('scm', err.message);
    throw err;
  }
  if (!found) return fail('forbidden', `the app has no installation ${installationId}`);
  if (hasWritePermission(found.permissions)) return fail('permissions', `installation ${installationId} has write-capable permissions`);

  // Spent and recorded together: a token is never used twice, and a recorded link always has one.
  const installation = await scm.db.withTransaction(async (tx) => {
    const spent = await consumeLinkState(tx, state);
    if (!spent) return undefined;
    return upsertScmInstallation(tx, {
      tenantId: spent.tenantId,
      installationId,
      accountLogin: found.account.login,
      accountType: found.account.type,
      repositories: found.repositories,
      // The human who proved control of the installation, also when a key started the flow.
      linkedBy: `user:${session.user.id}`,
    });
  });
  if (!installation) return fail('state', 'state token spent by a concurrent callback');
  return { ok: true, installation };
}
