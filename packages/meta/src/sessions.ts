// Browser sessions: an opaque random token in the `floe_session` cookie; the database keeps only
// its SHA-256 (sessions.id), so a leaked database cannot be replayed as cookies. A session ends
// when it expires, when it is revoked (sign-out), or when its user is disabled or deleted.

import { createHash, randomBytes } from 'node:crypto';
import type { Db } from './db.ts';
import { USER_COLUMNS, toUser, type User, type UserRow } from './users.ts';

export interface Session {
  /** SHA-256 of the token (hex): safe to log, useless as a cookie. */
  id: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
}

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

const sessionId = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/** Starts a session; the token is returned once and never stored. */
export async function createSession(db: Db, userId: string, ttlMs: number): Promise<{ token: string; session: Session }> {
  const token = randomBytes(32).toString('base64url');
  const id = sessionId(token);
  // Housekeeping on the way in keeps the table to live sessions without a background job.
  await db.query(`DELETE FROM sessions WHERE expires_at < now() - interval '1 day'`);
  const { rows } = await db.query<{ id: string; user_id: string; created_at: Date; expires_at: Date }>(
    `INSERT INTO sessions (id, user_id, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
     RETURNING id, user_id, created_at, expires_at`,
    [id, userId, ttlMs / 1000],
  );
  const r = rows[0]!;
  return { token, session: { id: r.id, userId: r.user_id, createdAt: r.created_at, expiresAt: r.expires_at } };
}

/** The live session of a token and its (enabled) user, or undefined. */
export async function getSession(db: Db, token: unknown): Promise<{ session: Session; user: User } | undefined> {
  if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) return undefined;
  const { rows } = await db.query<UserRow & { session_id: string; session_created_at: Date; expires_at: Date }>(
    `SELECT ${USER_COLUMNS}, s.id AS session_id, s.created_at AS session_created_at, s.expires_at
     FROM sessions s JOIN users u ON u.id = s.user_id
     WHERE s.id = $1 AND s.revoked_at IS NULL AND s.expires_at > now() AND NOT u.disabled`,
    [sessionId(token)],
  );
  const r = rows[0];
  if (!r) return undefined;
  return { session: { id: r.session_id, userId: r.id, createdAt: r.session_created_at, expiresAt: r.expires_at }, user: toUser(r) };
}

/** Ends one session (sign-out). True when a live session was ended. */
export async function revokeSession(db: Db, token: unknown): Promise<boolean> {
  if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) return false;
  const res = await db.query('UPDATE sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [sessionId(token)]);
  return res.rowCount > 0;
}

/** Ends every session of a user (password changed, account disabled). */
export async function revokeUserSessions(db: Db, userId: string): Promise<number> {
  const res = await db.query('UPDATE sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [userId]);
  return res.rowCount;
}
