import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Tickets printed by Floe's own planner are signed with the internal service key, so a querier
 * can tell them from SQL a user typed: only signed SQL may skip the per-query sandbox. The
 * signature covers the tenant, dataset, SQL, parameters and hints; the querier still
 * authenticates the caller and pins every table to the caller's tenant either way.
 */
export interface SignedPart {
  tenant: string;
  dataset: string;
  sql: string;
  params: unknown[];
  hints: unknown;
}

const canonical = (p: SignedPart) => JSON.stringify([p.tenant, p.dataset, p.sql, p.params, p.hints ?? null]);

export function signTicket(key: string, part: SignedPart): string {
  return createHmac('sha256', key).update(canonical(part)).digest('base64url');
}

export function verifyTicketSignature(key: string, part: SignedPart, sig: unknown): boolean {
  if (!key || typeof sig !== 'string' || sig.length > 100) return false;
  const expected = Buffer.from(signTicket(key, part));
  const given = Buffer.from(sig);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
