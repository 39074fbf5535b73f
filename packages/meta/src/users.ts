// Users: people who sign in (local password now, SSO later). A user belongs to no tenant by itself;
// memberships grant roles. Passwordless users are normal (SSO creates them just in time), so
// password_hash is nullable and never leaves this module.

import { randomBytes } from 'node:crypto';
import type { Db } from './db.ts';
import { MetaError, mapConstraintError } from './errors.ts';
import { assertLabel } from './ids.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, burnPasswordCheck, hashPassword, verifyPassword } from './passwords.ts';
import { revokeUserSessions } from './sessions.ts';

export interface User {
  id: string;
  email: string;
  displayName: string;
  isInstanceAdmin: boolean;
  disabled: boolean;
  /** Whether a local password is set (the hash itself is never returned). */
  hasPassword: boolean;
  oidcIssuer: string | null;
  oidcSubject: string | null;
  createdAt: Date;
}

type UserRow = {
  id: string;
  email: string;
  display_name: string;
  has_password: boolean;
  is_instance_admin: boolean;
  disabled: boolean;
  oidc_issuer: string | null;
  oidc_subject: string | null;
  created_at: Date;
};

export const USER_COLUMNS =
  'u.id, u.email, u.display_name, u.password_hash IS NOT NULL AS has_password, u.is_instance_admin, u.disabled, u.oidc_issuer, u.oidc_subject, u.created_at';

export function toUser(r: UserRow): User {
  return {
    id: r.id,
    email: r.email,
    displayName: r.display_name,
    isInstanceAdmin: r.is_instance_admin,
    disabled: r.disabled,
    hasPassword: r.has_password,
    oidcIssuer: r.oidc_issuer,
    oidcSubject: r.oidc_subject,
    createdAt: r.created_at,
  };
}
export type { UserRow };

const USER_ID_PATTERN = /^[0-9a-f]{16}$/;
// Deliberately loose: the address is an identifier here, not a mailbox we deliver to. Control
// characters are out: no address holds one, and the database refuses a NUL (a 500 before).
const EMAIL_PATTERN = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;
export const EMAIL_MAX_LENGTH = 254;

export const isValidUserId = (id: unknown): id is string => typeof id === 'string' && USER_ID_PATTERN.test(id);

/** Lowercased and trimmed; the users table holds only this form (users_email_lowercase). */
export function normaliseEmail(email: unknown): string {
  if (typeof email !== 'string') throw new MetaError('bad_data', 'email must be a string');
  const e = email.trim().toLowerCase();
  if (e.length > EMAIL_MAX_LENGTH || !EMAIL_PATTERN.test(e)) throw new MetaError('bad_data', `invalid email ${JSON.stringify(email)}`);
  return e;
}

export function assertPassword(password: unknown): asserts password is string {
  if (typeof password !== 'string' || password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw new MetaError('bad_data', `password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`);
  }
}

export interface CreateUserInput {
  email: string;
  displayName?: string;
  /** Omitted or null: a passwordless user (cannot sign in with the password form). */
  password?: string | null;
  isInstanceAdmin?: boolean;
  disabled?: boolean;
  oidcIssuer?: string | null;
  oidcSubject?: string | null;
}

/** Errors: bad_data (email, password, name), conflict (email or SSO identity taken). */
export async function createUser(db: Db, input: CreateUserInput): Promise<User> {
  const email = normaliseEmail(input.email);
  const displayName = input.displayName ?? '';
  assertLabel('display name', displayName);
  let hash: string | null = null;
  if (input.password !== undefined && input.password !== null) {
    assertPassword(input.password);
    hash = await hashPassword(input.password);
  }
  const id = randomBytes(8).toString('hex');
  const res = await db
    .query(
      `INSERT INTO users (id, email, display_name, password_hash, is_instance_admin, disabled, oidc_issuer, oidc_subject)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
      [id, email, displayName, hash, input.isInstanceAdmin ?? false, input.disabled ?? false, input.oidcIssuer ?? null, input.oidcSubject ?? null],
    )
    .catch((err: unknown) => mapConstraintError(err, `user ${email}`));
  if (res.rowCount === 0) throw new MetaError('conflict', `user ${email} already exists`);
  return mustGetUser(db, id);
}

export async function getUser(db: Db, id: string): Promise<User | undefined> {
  if (!isValidUserId(id)) return undefined;
  const { rows } = await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users u WHERE u.id = $1`, [id]);
  return rows[0] && toUser(rows[0]);
}

export async function getUserByEmail(db: Db, email: string): Promise<User | undefined> {
  let e: string;
  try {
    e = normaliseEmail(email);
  } catch {
    return undefined;
  }
  const { rows } = await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users u WHERE u.email = $1`, [e]);
  return rows[0] && toUser(rows[0]);
}

async function mustGetUser(db: Db, id: string): Promise<User> {
  const user = await getUser(db, id);
  if (!user) throw new MetaError('not_found', `user ${id} not found`);
  return user;
}

/** Every user, ordered by email. */
export async function listUsers(db: Db): Promise<User[]> {
  const { rows } = await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users u ORDER BY u.email`);
  return rows.map(toUser);
}

export interface UpdateUserInput {
  displayName?: string;
  /** A new password, or null to make the user passwordless. Either ends the user's sessions. */
  password?: string | null;
  isInstanceAdmin?: boolean;
  /** Disabling ends the user's sessions at once. */
  disabled?: boolean;
}

/** Errors: not_found, bad_data. */
export async function updateUser(db: Db, id: string, patch: UpdateUserInput): Promise<User> {
  if (patch.displayName !== undefined) assertLabel('display name', patch.displayName);
  if (patch.password !== undefined && patch.password !== null) assertPassword(patch.password);
  if (!isValidUserId(id)) throw new MetaError('not_found', `user ${JSON.stringify(id)} not found`);
  const hash = patch.password === undefined || patch.password === null ? null : await hashPassword(patch.password);
  return db.withTransaction(async (tx) => {
    const res = await tx.query(
      `UPDATE users SET
         display_name = COALESCE($2, display_name),
         password_hash = CASE WHEN $3::boolean THEN $4 ELSE password_hash END,
         is_instance_admin = COALESCE($5, is_instance_admin),
         disabled = COALESCE($6, disabled)
       WHERE id = $1`,
      [id, patch.displayName ?? null, patch.password !== undefined, hash, patch.isInstanceAdmin ?? null, patch.disabled ?? null],
    );
    if (res.rowCount === 0) throw new MetaError('not_found', `user ${id} not found`);
    // A changed password or a disabled account must not leave a stolen session alive.
    if (patch.password !== undefined || patch.disabled === true) await revokeUserSessions(tx, id);
    return mustGetUser(tx, id);
  });
}

/** Deletes the user with their memberships and sessions (cascade). Errors: not_found. */
export async function deleteUser(db: Db, id: string): Promise<void> {
  if (!isValidUserId(id)) throw new MetaError('not_found', `user ${JSON.stringify(id)} not found`);
  const res = await db.query('DELETE FROM users WHERE id = $1', [id]);
  if (res.rowCount === 0) throw new MetaError('not_found', `user ${id} not found`);
}

/**
 * The enabled user with this email and password, or undefined. Unknown addresses, passwordless and
 * disabled users cost the same hashing time as a wrong password, so timing tells nothing.
 */
export async function checkUserPassword(db: Db, email: string, password: string): Promise<User | undefined> {
  let e: string;
  try {
    e = normaliseEmail(email);
  } catch {
    await burnPasswordCheck(password);
    return undefined;
  }
  const { rows } = await db.query<UserRow & { password_hash: string | null }>(
    `SELECT ${USER_COLUMNS}, u.password_hash FROM users u WHERE u.email = $1`,
    [e],
  );
  const row = rows[0];
  if (!row?.password_hash || password.length > PASSWORD_MAX_LENGTH) {
    await burnPasswordCheck(password.slice(0, PASSWORD_MAX_LENGTH));
    return undefined;
  }
  const ok = await verifyPassword(password, row.password_hash);
  if (!ok || row.disabled) return undefined;
  return toUser(row);
}

/** The user an SSO identity (issuer and subject) is linked to, or undefined. */
export async function getUserByOidcIdentity(db: Db, issuer: string, subject: string): Promise<User | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users u WHERE u.oidc_issuer = $1 AND u.oidc_subject = $2`, [issuer, subject]);
  return rows[0] && toUser(rows[0]);
}

/**
 * Links an SSO identity to a user that has none yet (spec 2, SSO rule 2). A user already linked
 * to another identity keeps it: the provider asserting the same email for a second subject is
 * not proof that both are one person. Errors: conflict (linked elsewhere, or identity taken).
 */
export async function linkOidcIdentity(db: Db, userId: string, issuer: string, subject: string): Promise<User> {
  const res = await db
    .query(`UPDATE users SET oidc_issuer = $2, oidc_subject = $3 WHERE id = $1 AND oidc_subject IS NULL`, [userId, issuer, subject])
    .catch((err: unknown) => mapConstraintError(err, `SSO identity of user ${userId}`));
  if (res.rowCount === 0) throw new MetaError('conflict', `user ${userId} is linked to another SSO identity`);
  return mustGetUser(db, userId);
}
