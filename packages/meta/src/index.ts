/**
 * @floe/meta — the metadata database: tenants, datasets, API keys, users, memberships and sessions,
 * attribute type pins and mismatch counts, plus the tables of the Iceberg SQL catalog.
 *
 * Model: one PostgreSQL-compatible database holds everything that is not telemetry. In the embedded
 * mode it is PGlite (PostgreSQL 18 compiled to WASM, in-process, persisted to a directory); in
 * cluster mode it is a PostgreSQL server reached through `pg`. `openDb` returns the same small `Db`
 * interface for both, with identical result types (int8 always a string, rowCount always a
 * number), so every repository here and the Iceberg catalog above it are written once.
 *
 * `migrate(db)` brings the schema up to date at every start (numbered migrations, one transaction,
 * an advisory lock on PostgreSQL so concurrent starts are safe). Repositories are plain async
 * functions taking a `Db` — the root handle or a transaction handle from `withTransaction` — and
 * raise `MetaError` with kind conflict / not_found / bad_data for conditions a client caused.
 *
 * API keys and session tokens are stored as SHA-256 hashes only (both carry 256 random bits);
 * `createKeyVerifier` adds the short-TTL cache that ingest needs to verify a key per request. Human
 * passwords get scrypt with a salt per user.
 */

export { openDb } from './db.ts';
export { openDbFromConfig } from './from-config.ts';
export type { Db, DbConfig, QueryResult } from './db.ts';

export { MetaError, isMetaError } from './errors.ts';
export type { MetaErrorKind } from './errors.ts';

export { MIGRATIONS, migrate, validateMigrations } from './migrations.ts';
export type { Migration, MigrateResult } from './migrations.ts';

export {
  DEFAULT_DATASET_ID,
  ID_PATTERN,
  MONITORING_DATASET_ID,
  SYSTEM_TENANT_ID,
  isValidDatasetId,
  isValidTenantId,
} from './ids.ts';

export { createTenant, deleteTenant, ensureTenant, getTenant, listTenants, refuseTablesLeftBehind, updateTenant } from './tenants.ts';
export type { CreateTenantInput, Tenant, TenantSettings, UpdateTenantInput } from './tenants.ts';

export { cancelDeleteRequest, createDeleteRequest, deleteRequestProcessed, dueDeleteRequests, finishDeleteRequest, listDeleteRequests, startDeleteRequest } from './delete-requests.ts';
export type { CancelOutcome, CreateDeleteRequestInput, DeleteRequest } from './delete-requests.ts';
export { deleteRuleGroups, listRuleGroups, listRuleGroupVersions, putRuleGroup, saveRuleGroupState } from './rule-groups.ts';
export { acquireLease, liveLeaseHolders, releaseLease, runExclusive, type ExclusiveOptions } from './leases.ts';
export { LeaseMembership, observeMembership, ownerOf, type MembershipOptions } from './lease-membership.ts';
export type { RuleGroupFilter, RuleGroupKey, RuleLanguage, StoredRuleGroup } from './rule-groups.ts';
export { createDataset, deleteDataset, getDataset, getDefaultDataset, listDatasets, liveDatasets, withDefaultDataset } from './datasets.ts';
export type { CreateDatasetInput, Dataset } from './datasets.ts';

export {
  API_KEY_SCOPES,
  createApiKey,
  createKeyVerifier,
  getApiKey,
  hashApiKeySecret,
  listApiKeys,
  parseApiKeySecret,
  revokeApiKey,
  updateApiKeyScopes,
  verifyApiKey,
} from './api-keys.ts';
export type {
  ApiKey,
  ApiKeyScope,
  CreateApiKeyInput,
  CreatedApiKey,
  KeyVerifier,
  KeyVerifierOptions,
  VerifiedApiKey,
} from './api-keys.ts';

export { BOOTSTRAP_SCOPES, bootstrapSummary, bootstrapTenant } from './bootstrap.ts';
export type { BootstrapResult } from './bootstrap.ts';

export { checkUserPassword, createUser, deleteUser, getUser, getUserByEmail, getUserByOidcIdentity, isValidUserId, linkOidcIdentity, listUsers, normaliseEmail, updateUser } from './users.ts';
export { DEMO_GRANT, provisionDemoUser } from './demo.ts';
export type { CreateUserInput, UpdateUserInput, User } from './users.ts';
export { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, hashPassword, verifyPassword } from './passwords.ts';

export {
  MEMBERSHIP_ROLES,
  OIDC_MAPPING,
  effectiveRoles,
  grantMappedMembership,
  grantMembership,
  higherRole,
  isMembershipRole,
  listTenantMemberships,
  listUserMemberships,
  revokeMembership,
  roleRank,
  syncMappedMemberships,
} from './memberships.ts';
export type { Membership, MembershipRole } from './memberships.ts';

export { createSession, getSession, revokeSession, revokeUserSessions } from './sessions.ts';
export type { Session } from './sessions.ts';

export { listAttributeTypeMismatches, listAttributeTypePins, pinAttributeTypes, recordAttributeTypeMismatches } from './attribute-types.ts';
export type { AttributeMismatchReason, AttributeTypeMismatch, AttributeTypePin, AttributeValueType, PinOutcome } from './attribute-types.ts';

export { listAttributeQueryDemand, recordAttributeQueryDemand } from './query-demand.ts';

export {
  METRIC_INSTRUMENTS,
  REGISTRY_ATTRIBUTE_TYPES,
  REQUIREMENT_LEVELS,
  createSchemaRegistry,
  deleteSchemaRegistry,
  getSchemaRegistry,
  listSchemaRegistries,
  lockSchemaRegistries,
  updateSchemaRegistry,
} from './schema-registries.ts';
export type { MetricInstrument, RegistryAttribute, RegistryAttributeType, RegistryEntity, RegistryMetric, RequirementLevel, SchemaRegistry, SchemaRegistryDocument } from './schema-registries.ts';
export type { AttributeQueryDemand } from './query-demand.ts';

export {
  consumeLinkState,
  createLinkState,
  deleteScmInstallation,
  getPendingLinkState,
  isScmInstallationLinked,
  listScmInstallations,
  updateScmRepositories,
  upsertScmInstallation,
} from './scm.ts';
export type { ScmInstallation, ScmLinkState } from './scm.ts';

export {
  MAX_REDIRECT_URIS,
  RETIRED_REFRESH_KEPT,
  createOAuthRequest,
  decideOAuthRequest,
  getOAuthClient,
  getOAuthRequest,
  issueOAuthGrant,
  oauthCodeId,
  redeemOAuthCode,
  refreshOAuthGrant,
  registerOAuthClient,
  revokeOAuthToken,
} from './oauth.ts';
export type { OAuthClient, OAuthCode, OAuthRequest, OAuthTokens, RedeemedCode } from './oauth.ts';
