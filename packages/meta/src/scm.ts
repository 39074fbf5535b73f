// Source-control links (spec 2, States and transitions: Link state token, Installation).
//
// A link state is a single-use random token handed to the host in the install URL; the database
// keeps its SHA-256 only. `consumeLinkState` and `upsertScmInstallation` run in one transaction in
// the callback, so an installation is recorded exactly when its token is spent.

import { createHash, randomBytes } from 'node:crypto';
import type { Db } from './db.ts';

export interface ScmLinkState {
  tenantId: string;
  /** The user who started the flow, or null for a flow started with a key. */
  userId: string | null;
  startedBy: string;
  expiresAt: Date;
}

export interface ScmInstallation {
  tenantId: string;
  installationId: number;
  accountLogin: string;
  /** `Organization` or `User`, as the host names it. */
  accountType: string;
  /** owner/name of every covered repository, last read from the host. */
  repositories: string[];
  linkedBy: string;
  linkedAt: Date;
  refreshedAt: Date;
}

const STATE_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const stateHash = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/** Starts a link: the token is returned once and never stored. */
export async function createLinkState(db: Db, input: { tenantId: string; userId: string | null; startedBy: string; ttlMs: number }): Promise<{ token: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  // Housekeeping on the way in, as for sessions: spent and expired states are of no further use.
  await db.query(`DELETE FROM scm_link_states WHERE expires_at < now() - interval '1 day'`);
  const { rows } = await db.query<{ expires_at: Date }>(
    `INSERT INTO scm_link_states (state_hash, tenant_id, user_id, started_by, expires_at)
     VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5)) RETURNING expires_at`,
    [stateHash(token), input.tenantId, input.userId, input.startedBy, input.ttlMs / 1000],
  );
  return { token, expiresAt: rows[0]!.expires_at };
}

type StateRow = { tenant_id: string; user_id: string | null; started_by: string; expires_at: Date };
const toState = (r: StateRow): ScmLinkState => ({ tenantId: r.tenant_id, userId: r.user_id, startedBy: r.started_by, expiresAt: r.expires_at });

/** The pending (unexpired, unused) state of a token, or undefined. Does not spend it. */
export async function getPendingLinkState(db: Db, token: unknown): Promise<ScmLinkState | undefined> {
  if (typeof token !== 'string' || !STATE_PATTERN.test(token)) return undefined;
  const { rows } = await db.query<StateRow>(
    'SELECT tenant_id, user_id, started_by, expires_at FROM scm_link_states WHERE state_hash = $1 AND used_at IS NULL AND expires_at > now()',
    [stateHash(token)],
  );
  return rows[0] ? toState(rows[0]) : undefined;
}

/** Spends a pending state; undefined when it was already spent, expired or unknown (a race lost). */
export async function consumeLinkState(db: Db, token: string): Promise<ScmLinkState | undefined> {
  if (!STATE_PATTERN.test(token)) return undefined;
  const { rows } = await db.query<StateRow>(
    `UPDATE scm_link_states SET used_at = now()
     WHERE state_hash = $1 AND used_at IS NULL AND expires_at > now()
     RETURNING tenant_id, user_id, started_by, expires_at`,
    [stateHash(token)],
  );
  return rows[0] ? toState(rows[0]) : undefined;
}

type InstallationRow = {
  tenant_id: string;
  installation_id: string;
  account_login: string;
  account_type: string;
  repositories: string[];
  linked_by: string;
  linked_at: Date;
  refreshed_at: Date;
};
const COLUMNS = 'tenant_id, installation_id, account_login, account_type, repositories, linked_by, linked_at, refreshed_at';
const toInstallation = (r: InstallationRow): ScmInstallation => ({
  tenantId: r.tenant_id,
  // bigint comes back as a decimal string; host installation ids stay far below 2^53.
  installationId: Number(r.installation_id),
  accountLogin: r.account_login,
  accountType: r.account_type,
  repositories: r.repositories,
  linkedBy: r.linked_by,
  linkedAt: r.linked_at,
  refreshedAt: r.refreshed_at,
});

/** Records a link, or refreshes it when the tenant already has it (re-running the flow is no failure). */
export async function upsertScmInstallation(
  db: Db,
  input: { tenantId: string; installationId: number; accountLogin: string; accountType: string; repositories: readonly string[]; linkedBy: string },
): Promise<ScmInstallation> {
  const { rows } = await db.query<InstallationRow>(
    `INSERT INTO scm_installations (tenant_id, installation_id, account_login, account_type, repositories, linked_by)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, installation_id) DO UPDATE SET account_login = EXCLUDED.account_login, account_type = EXCLUDED.account_type,
       repositories = EXCLUDED.repositories, linked_by = EXCLUDED.linked_by, refreshed_at = now()
     RETURNING ${COLUMNS}`,
    [input.tenantId, input.installationId, input.accountLogin, input.accountType, [...input.repositories], input.linkedBy],
  );
  return toInstallation(rows[0]!);
}

/** A tenant's links, oldest first (the order repository-less lookups probe them in). */
export async function listScmInstallations(db: Db, tenantId: string): Promise<ScmInstallation[]> {
  const { rows } = await db.query<InstallationRow>(`SELECT ${COLUMNS} FROM scm_installations WHERE tenant_id = $1 ORDER BY linked_at, installation_id`, [tenantId]);
  return rows.map(toInstallation);
}

/** Stores a freshly read repository list; false when the link was removed meanwhile. */
export async function updateScmRepositories(db: Db, tenantId: string, installationId: number, repositories: readonly string[]): Promise<boolean> {
  const res = await db.query('UPDATE scm_installations SET repositories = $3, refreshed_at = now() WHERE tenant_id = $1 AND installation_id = $2', [tenantId, installationId, [...repositories]]);
  return res.rowCount > 0;
}

/** Removes a tenant's link; true when there was one. */
export async function deleteScmInstallation(db: Db, tenantId: string, installationId: number): Promise<boolean> {
  const res = await db.query('DELETE FROM scm_installations WHERE tenant_id = $1 AND installation_id = $2', [tenantId, installationId]);
  return res.rowCount > 0;
}

/** Whether any tenant still links the installation (its token may then still be minted). */
export async function isScmInstallationLinked(db: Db, installationId: number): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM scm_installations WHERE installation_id = $1 LIMIT 1', [installationId]);
  return rows.length > 0;
}
