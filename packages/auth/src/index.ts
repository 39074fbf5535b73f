/**
 * @floe/auth: turns request credentials (bearer API key, X-Tenant-ID, optional X-Dataset-ID)
 * into a TenantContext, or a 400/401/403 FloeError. Every surface (OTLP HTTP and gRPC, Flight,
 * the router) calls the same function.
 */
export { authenticate, credentialsFrom, DEFAULT_DATASET } from './authenticate.ts';
export type { AuthDeps, Credentials, VerifiedKey } from './authenticate.ts';
export { isValidName } from './tenant-context.ts';
export type { TenantContext } from './tenant-context.ts';
export { signTicket, verifyTicketSignature } from './ticket-signature.ts';
export type { SignedPart } from './ticket-signature.ts';
export { authDepsFromDb } from './from-db.ts';
