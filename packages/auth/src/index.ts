/**
 * @floe/auth: turns request credentials (bearer API key, X-Tenant-ID, optional X-Dataset-ID)
 * into a TenantContext, or a 400/401/403 FloeError. Every surface (OTLP HTTP and gRPC, Flight,
 * the router) calls the same function.
 *
 * The management API has callers that are not bound to one tenant (the break-glass key, signed-in
 * users): `resolvePrincipal` turns its credentials (bearer key or session cookie) into a
 * Principal, and `permissions.ts` is the one table of who may do what with it.
 */
export { authenticate, credentialsFrom, DEFAULT_DATASET, parseAuthorization, withScopeOrgId } from './authenticate.ts';
export type { AuthDeps, AuthenticateOptions, Credentials, VerifiedKey } from './authenticate.ts';
export { isValidName, requireScope } from './tenant-context.ts';
export type { TenantContext } from './tenant-context.ts';
export { signTicket, verifyTicketSignature } from './ticket-signature.ts';
export type { SignedPart } from './ticket-signature.ts';
export { authDepsFromDb, managementAuthDepsFromDb } from './from-db.ts';
export { principalLabel, resolvePrincipal } from './principal.ts';
export type { ManagementAuthDeps, ManagementCredentials, Principal, ResolvedSession, SessionUser } from './principal.ts';
export { assertGrantableScopes, authorizeInstance, authorizeTables, authorizeTenant, isInstanceAdmin, mayReadUser, mayRevokeKey, tenantRole } from './permissions.ts';
export type { InstanceAction, TenantAction } from './permissions.ts';
