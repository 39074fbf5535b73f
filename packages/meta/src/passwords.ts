// Password hashing for local users: scrypt (memory-hard, in Node's own crypto, no native
// dependency), a random salt per hash, parameters stored with the hash so they can be raised later
// without invalidating existing passwords.
//
// Stored form: `scrypt$<N>$<r>$<p>$<salt base64url>$<key base64url>`.
// N = 2^15, r = 8, p = 1 costs 32 MiB and roughly 50–100 ms per hash on one core: OWASP's minimum
// for scrypt is N = 2^17 with r = 8 and p = 1 *or* an equivalent trade of memory for time; a login
// is rare enough that this is cheap, and a stolen hash costs an attacker the same 32 MiB per guess.

import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, opts: object) => Promise<Buffer>;

const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
// scrypt needs 128 · N · r bytes; Node refuses anything at or above maxmem (default 32 MiB).
const maxmem = (N: number, r: number) => 256 * N * r;

/** Shortest and longest password accepted (longer inputs only cost hashing time). */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 1024;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const { N, r, p } = PARAMS;
  const key = await scryptAsync(password.normalize('NFC'), salt, KEY_BYTES, { N, r, p, maxmem: maxmem(N, r) });
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

const STORED = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

/** Constant-time check of a password against a stored hash; false for any malformed hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = STORED.exec(stored);
  if (!m) return false;
  const [N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // Bounds keep a corrupted row from turning a login into a memory or CPU bomb.
  if (N < 2 || N > 2 ** 20 || (N & (N - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const salt = Buffer.from(m[4]!, 'base64url');
  const expected = Buffer.from(m[5]!, 'base64url');
  if (expected.length < 16) return false;
  const key = await scryptAsync(password.normalize('NFC'), salt, expected.length, { N, r, p, maxmem: maxmem(N, r) });
  return timingSafeEqual(key, expected);
}

// Checked when a login names no user (or a passwordless one), so that answer takes as long as a
// wrong password and does not reveal which addresses exist.
let dummy: Promise<string> | undefined;
export async function burnPasswordCheck(password: string): Promise<void> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  await verifyPassword(password, await dummy);
}
