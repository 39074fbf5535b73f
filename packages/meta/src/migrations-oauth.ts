// The OAuth 2.1 authorization server's tables (spec 2, the session-authenticated consent flow),
// one migration appended to MIGRATIONS.
//
// Load-bearing choices:
// - Access tokens are API keys (api_keys.expires_at, new here): every API already verifies them,
//   binds them to one tenant and checks their scopes, so an OAuth client gets nothing a key could
//   not have. A grant remembers the key it holds now, and a refresh revokes it.
// - Only SHA-256 of every secret is stored (request handles, codes, refresh tokens), as for API
//   keys and sessions: a leaked database cannot finish a consent, redeem a code or refresh a grant.
// - A grant keeps the hash of the refresh token it replaced, so a refresh token presented twice
//   (stolen and used by two parties) is recognised and revokes the whole grant (OAuth 2.1 §4.3.1).

import type { Migration } from './migrations.ts';

export const OAUTH_MIGRATION: Migration = {
  id: 10,
  name: 'oauth clients, authorization requests, codes and grants; api key expiry',
  sql: `
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS expires_at timestamptz;

CREATE TABLE IF NOT EXISTS oauth_clients (
  id             text PRIMARY KEY,
  name           text NOT NULL,
  redirect_uris  text[] NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS oauth_requests (
  id              text PRIMARY KEY,
  client_id       text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  redirect_uri    text NOT NULL,
  scopes          text[] NOT NULL,
  state           text,
  code_challenge  text NOT NULL,
  resource        text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  decided_at      timestamptz
);
CREATE INDEX IF NOT EXISTS oauth_requests_expires ON oauth_requests (expires_at);

CREATE TABLE IF NOT EXISTS oauth_codes (
  id              text PRIMARY KEY,
  client_id       text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  redirect_uri    text NOT NULL,
  code_challenge  text NOT NULL,
  user_id         text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  tenant_id       text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  scopes          text[] NOT NULL,
  resource        text,
  expires_at      timestamptz NOT NULL,
  used_at         timestamptz
);
CREATE INDEX IF NOT EXISTS oauth_codes_expires ON oauth_codes (expires_at);

CREATE TABLE IF NOT EXISTS oauth_grants (
  id                     text PRIMARY KEY,
  client_id              text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  user_id                text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  tenant_id              text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  scopes                 text[] NOT NULL,
  code_id                text,
  refresh_hash           text NOT NULL UNIQUE,
  previous_refresh_hash  text,
  access_key_id          text,
  created_at             timestamptz NOT NULL DEFAULT now(),
  expires_at             timestamptz NOT NULL,
  revoked_at             timestamptz
);
CREATE INDEX IF NOT EXISTS oauth_grants_previous ON oauth_grants (previous_refresh_hash);
CREATE INDEX IF NOT EXISTS oauth_grants_code ON oauth_grants (code_id);
`,
};

// Replays caught at any moment (migration 17):
// - A code presented again is marked, and a grant is issued from a code only under a lock on its
//   row that sees no mark: a replay landing between the redemption and the grant (no grant to
//   revoke yet) still ends it.
// - The refresh tokens a grant rotated away are kept (previous_refresh_hash only knew the last
//   one; pruned to the newest RETIRED_REFRESH_KEPT of them, oauth.ts), so any of them
//   presented again revokes the grant (OAuth 2.1 §4.3.1, RFC 9700 §4.14.2). They go with their grant. previous_refresh_hash is still written for processes of the older
//   version during a rolling upgrade.
export const OAUTH_REPLAY_MIGRATION: Migration = {
  id: 17,
  name: 'oauth code replay mark; every retired refresh token of a grant',
  sql: `
ALTER TABLE oauth_codes ADD COLUMN IF NOT EXISTS replayed_at timestamptz;

CREATE TABLE IF NOT EXISTS oauth_retired_refresh (
  refresh_hash  text PRIMARY KEY,
  grant_id      text NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
  retired_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS oauth_retired_refresh_grant ON oauth_retired_refresh (grant_id);

INSERT INTO oauth_retired_refresh (refresh_hash, grant_id)
  SELECT previous_refresh_hash, id FROM oauth_grants WHERE previous_refresh_hash IS NOT NULL
  ON CONFLICT DO NOTHING;
`,
};
