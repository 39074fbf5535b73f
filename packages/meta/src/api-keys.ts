// API keys: machine credentials bound to a tenant (and optionally one dataset), carrying scopes.
//
// Secret format: `floe_<key id>_<secret>` where the key id is 16 lowercase hex characters (64 random
// bits, also the api_keys primary key and the public handle shown in listings) and the secret is
// base64url of 32 random bytes (43 characters). Verification looks the row up by the embedded id,
// then compares hashes in constant time.
//
// Only SHA-256 of the whole secret is stored. A fast, unsalted hash is the right tool here: the
// input carries 256 bits of randomness, so there is nothing to brute-force or look up in a table,
// and slow password hashes (scrypt, argon2) would only add latency to every ingest request. Passwords
// chosen by humans are a different matter and get a slow hash (users table, later work).

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from './db.ts';
import { MetaError, mapConstraintError } from './errors.ts';
import { assertLabel, isValidDatasetId, isValidTenantId } from './ids.ts';
import { keysChanged, registerKeyCache } from './key-cache.ts';

/** Scopes a key may carry. */
export const API_KEY_SCOPES = ['ingest', 'query', 'delete', 'tenant:manage'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export interface ApiKey {
  id: string;
  tenantId: string;
  /** null: the key reaches every dataset of its tenant. */
  datasetId: string | null;
  name: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  createdBy: string | null;
  /** When the key stops working (OAuth access tokens); null: never. */
  expiresAt: Date | null;
}

/** Returned once, at creation: the only time the secret exists outside the caller's hands. */
export interface CreatedApiKey extends ApiKey {
  secret: string;
}

export interface VerifiedApiKey {
  readonly keyId: string;
  readonly tenantId: string;
  readonly datasetId: string | null;
  readonly scopes: readonly string[];
}

type KeyRow = {
  id: string;
  tenant_id: string;
  dataset_id: string | null;
  name: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  created_by: string | null;
  expires_at: Date | null;
};

const COLUMNS = 'id, tenant_id, dataset_id, name, scopes, created_at, last_used_at, revoked_at, created_by, expires_at';

function toApiKey(r: KeyRow): ApiKey {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    datasetId: r.dataset_id,
    name: r.name,
    scopes: r.scopes,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    revokedAt: r.revoked_at,
    createdBy: r.created_by,
    expiresAt: r.expires_at,
  };
}

const SECRET_PATTERN = /^floe_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const KEY_ID_PATTERN = /^[0-9a-f]{16}$/;

/** The key id embedded in a well-formed secret, or undefined. */
export function parseApiKeySecret(secret: unknown): { keyId: string } | undefined {
  if (typeof secret !== 'string') return undefined;
  const m = SECRET_PATTERN.exec(secret);
  return m?.[1] === undefined ? undefined : { keyId: m[1] };
}

/** SHA-256 (hex) of the whole secret: what api_keys.key_hash holds. */
export function hashApiKeySecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

function normaliseScopes(scopes: unknown): string[] {
  if (!Array.isArray(scopes) || scopes.length === 0) {
    throw new MetaError('bad_data', `scopes must be a non-empty list of ${API_KEY_SCOPES.join(', ')}`);
  }
  for (const s of scopes) {
    if (!(API_KEY_SCOPES as readonly unknown[]).includes(s)) {
      throw new MetaError('bad_data', `unknown scope ${JSON.stringify(s)}; known: ${API_KEY_SCOPES.join(', ')}`);
    }
  }
  // Deduplicated, in the canonical order of API_KEY_SCOPES.
  return API_KEY_SCOPES.filter((s) => scopes.includes(s));
}

export interface CreateApiKeyInput {
  tenantId: string;
  /** Bind the key to one dataset of the tenant; omitted or null: all datasets. */
  datasetId?: string | null;
  name?: string;
  scopes: readonly string[];
  /** Who created it (user id, 'admin', 'floe admin bootstrap'…), for audit. */
  createdBy?: string | null;
  /** The key stops working this long after creation (OAuth access tokens); omitted: never. */
  ttlMs?: number;
}

/** Creates a key. Errors: bad_data (scopes, name), not_found (tenant or dataset). */
export async function createApiKey(db: Db, input: CreateApiKeyInput): Promise<CreatedApiKey> {
  const scopes = normaliseScopes(input.scopes);
  const name = input.name ?? '';
  assertLabel('key name', name);
  const createdBy = input.createdBy ?? null;
  if (createdBy !== null) assertLabel('created_by', createdBy);
  const datasetId = input.datasetId ?? null;
  if (!isValidTenantId(input.tenantId)) throw new MetaError('not_found', `tenant ${JSON.stringify(input.tenantId)} not found`);
  if (datasetId !== null && !isValidDatasetId(datasetId)) {
    throw new MetaError('not_found', `dataset ${JSON.stringify(datasetId)} not found`);
  }

  const tenant = await db.query('SELECT 1 FROM tenants WHERE id = $1', [input.tenantId]);
  if (tenant.rowCount === 0) throw new MetaError('not_found', `tenant ${input.tenantId} not found`);
  if (datasetId !== null) {
    const ds = await db.query('SELECT 1 FROM datasets WHERE tenant_id = $1 AND id = $2', [input.tenantId, datasetId]);
    if (ds.rowCount === 0) throw new MetaError('not_found', `dataset ${datasetId} not found in tenant ${input.tenantId}`);
  }

  const id = randomBytes(8).toString('hex');
  const secret = `floe_${id}_${randomBytes(32).toString('base64url')}`;
  const { rows } = await db
    .query<KeyRow>(
      `INSERT INTO api_keys (id, tenant_id, dataset_id, name, key_hash, scopes, created_by, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6::text[], $7, CASE WHEN $8::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $8::float8) END)
       RETURNING ${COLUMNS}`,
      [id, input.tenantId, datasetId, name, hashApiKeySecret(secret), scopes, createdBy, input.ttlMs === undefined ? null : input.ttlMs / 1000],
    )
    // A concurrent delete of the tenant or dataset surfaces as a foreign-key error → not_found.
    .catch((err: unknown) => mapConstraintError(err, `api key for tenant ${input.tenantId}`));
  const row = rows[0];
  if (!row) throw new Error('INSERT … RETURNING returned no row');
  return { ...toApiKey(row), secret };
}

// How stale last_used_at may get before a verification refreshes it: keeps verification (once per
// cache miss) from turning into one write per request.
const LAST_USED_RESOLUTION_SECONDS = 60;

async function lookup(db: Db, keyId: string, hash: string): Promise<VerifiedApiKey | undefined> {
  const { rows } = await db.query<{
    id: string;
    tenant_id: string;
    dataset_id: string | null;
    key_hash: string;
    scopes: string[];
    revoked: boolean;
    tenant_disabled: boolean;
    touch: boolean;
  }>(
    `SELECT k.id, k.tenant_id, k.dataset_id, k.key_hash, k.scopes,
            (k.revoked_at IS NOT NULL OR coalesce(k.expires_at <= now(), false)) AS revoked,
            t.disabled AS tenant_disabled,
            (k.last_used_at IS NULL OR k.last_used_at < now() - make_interval(secs => $2)) AS touch
     FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
     WHERE k.id = $1`,
    [keyId, LAST_USED_RESOLUTION_SECONDS],
  );
  const row = rows[0];
  if (!row) return undefined;
  const stored = Buffer.from(row.key_hash, 'hex');
  const given = Buffer.from(hash, 'hex');
  if (stored.length !== given.length || !timingSafeEqual(stored, given)) return undefined;
  if (row.revoked || row.tenant_disabled) return undefined;
  if (row.touch) await db.query('UPDATE api_keys SET last_used_at = now() WHERE id = $1', [keyId]);
  return Object.freeze({
    keyId: row.id,
    tenantId: row.tenant_id,
    datasetId: row.dataset_id,
    scopes: Object.freeze([...row.scopes]),
  });
}

/**
 * Checks a presented secret against the database. undefined for malformed, unknown or revoked keys
 * and for keys of a disabled tenant; callers answer 401 without saying which.
 */
export async function verifyApiKey(db: Db, secret: unknown): Promise<VerifiedApiKey | undefined> {
  const parsed = parseApiKeySecret(secret);
  if (!parsed) return undefined;
  return lookup(db, parsed.keyId, hashApiKeySecret(secret as string));
}

export interface KeyVerifierOptions {
  /** How long a result (positive or negative) is reused. Default 10 s. */
  ttlMs?: number;
  /** Bound on cached results; the oldest go first. Default 10,000. */
  maxEntries?: number;
  /** Called with every invalidation, for caches that go stale with the same writes (datasets that exist). */
  onInvalidate?: () => void;
}

export interface KeyVerifier {
  verify(secret: unknown): Promise<VerifiedApiKey | undefined>;
  /** Forget every cached result. */
  invalidate(): void;
  /** Stop receiving invalidations (when the owning service stops). */
  dispose(): void;
}

/**
 * verifyApiKey with a short-lived in-memory cache, for ingest (one verification per request).
 * Revocations, scope changes, tenant disable/delete and dataset deletion made through this package
 * on the same Db in this process clear the cache once committed; changes made by other processes are seen within
 * `ttlMs`. Concurrent verifications of the same secret share one database lookup.
 */
export function createKeyVerifier(db: Db, opts: KeyVerifierOptions = {}): KeyVerifier {
  const ttlMs = opts.ttlMs ?? 10_000;
  const maxEntries = opts.maxEntries ?? 10_000;
  // Keyed by the secret's hash, so the map holds no secrets.
  const cache = new Map<string, { value: VerifiedApiKey | undefined; expires: number }>();
  const inflight = new Map<string, Promise<VerifiedApiKey | undefined>>();
  // Bumped by invalidate(): lookups that started before it must not fill the cache afterwards.
  let generation = 0;

  const invalidate = (): void => {
    generation++;
    cache.clear();
    inflight.clear();
    opts.onInvalidate?.();
  };
  const unregister = registerKeyCache(db, invalidate);

  return {
    async verify(secret: unknown) {
      const parsed = parseApiKeySecret(secret);
      if (!parsed) return undefined;
      const hash = hashApiKeySecret(secret as string);
      const hit = cache.get(hash);
      if (hit) {
        if (hit.expires > Date.now()) return hit.value;
        cache.delete(hash);
      }
      const pending = inflight.get(hash);
      if (pending) return pending;
      const gen = generation;
      const p = lookup(db, parsed.keyId, hash).then(
        (value) => {
          if (inflight.get(hash) === p) inflight.delete(hash);
          if (gen === generation && ttlMs > 0) {
            while (cache.size >= maxEntries) {
              const oldest = cache.keys().next();
              if (oldest.done) break;
              cache.delete(oldest.value);
            }
            cache.set(hash, { value, expires: Date.now() + ttlMs });
          }
          return value;
        },
        (err: unknown) => {
          if (inflight.get(hash) === p) inflight.delete(hash);
          throw err;
        },
      );
      inflight.set(hash, p);
      return p;
    },
    invalidate,
    dispose() {
      unregister();
      invalidate();
    },
  };
}

export async function getApiKey(db: Db, tenantId: string, keyId: string): Promise<ApiKey | undefined> {
  if (!isValidTenantId(tenantId) || !KEY_ID_PATTERN.test(keyId)) return undefined;
  const { rows } = await db.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    keyId,
  ]);
  return rows[0] && toApiKey(rows[0]);
}

/** The tenant's keys, oldest first; revoked ones included unless activeOnly. Never secrets or hashes. */
export async function listApiKeys(db: Db, tenantId: string, opts: { activeOnly?: boolean } = {}): Promise<ApiKey[]> {
  if (!isValidTenantId(tenantId)) return [];
  const active = opts.activeOnly ? ' AND revoked_at IS NULL' : '';
  const { rows } = await db.query<KeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE tenant_id = $1${active} ORDER BY created_at, seq`,
    [tenantId],
  );
  return rows.map(toApiKey);
}

/**
 * Revokes a key of the tenant (idempotent: revoking again keeps the first revocation time).
 * Errors: not_found (no such key in this tenant).
 */
export async function revokeApiKey(db: Db, tenantId: string, keyId: string): Promise<ApiKey> {
  if (!isValidTenantId(tenantId) || !KEY_ID_PATTERN.test(keyId)) {
    throw new MetaError('not_found', `api key ${JSON.stringify(keyId)} not found`);
  }
  const { rows } = await db.query<KeyRow>(
    `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now())
     WHERE tenant_id = $1 AND id = $2
     RETURNING ${COLUMNS}`,
    [tenantId, keyId],
  );
  const row = rows[0];
  if (!row) throw new MetaError('not_found', `api key ${keyId} not found in tenant ${tenantId}`);
  await keysChanged(db);
  return toApiKey(row);
}

/** Replaces a key's scopes. Errors: bad_data (scopes), not_found. */
export async function updateApiKeyScopes(
  db: Db,
  tenantId: string,
  keyId: string,
  scopes: readonly string[],
): Promise<ApiKey> {
  const normalised = normaliseScopes(scopes);
  if (!isValidTenantId(tenantId) || !KEY_ID_PATTERN.test(keyId)) {
    throw new MetaError('not_found', `api key ${JSON.stringify(keyId)} not found`);
  }
  const { rows } = await db.query<KeyRow>(
    `UPDATE api_keys SET scopes = $3::text[]
     WHERE tenant_id = $1 AND id = $2
     RETURNING ${COLUMNS}`,
    [tenantId, keyId, normalised],
  );
  const row = rows[0];
  if (!row) throw new MetaError('not_found', `api key ${keyId} not found in tenant ${tenantId}`);
  await keysChanged(db);
  return toApiKey(row);
}
