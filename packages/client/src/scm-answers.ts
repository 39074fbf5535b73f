import { optional, type Shape } from './answer-shape.ts';

/**
 * What Floe's clients (the CLI and the agent tools) read of the source-control routes' answers
 * (/api/v1/tenants/{t}/scm-installations…, …/source-context), defined once for both.
 */

/** One linked installation (scm-installations list items, the attach answer). */
export const SCM_INSTALLATION: Shape = { installation_id: 'number', account: { login: 'string' }, repositories: ['string'], linked_by: 'string', stale: optional('boolean') };

/** GET scm-installations. */
export const SCM_INSTALLATIONS: Shape = { stale: optional('boolean'), installations: [SCM_INSTALLATION] };

/** POST scm-installations/link. */
export const SCM_LINK: Shape = { install_url: 'string', expires_at: 'string' };

/** What a source-context answer must hold besides `status` (checked first as `{ status: 'string' }`): it depends on the status. */
export function sourceContextShape(status: string): Shape {
  return status === 'unavailable'
    ? { status: 'string', reason: 'string' }
    : { status: 'string', repository: 'string', ref: optional('string'), path: 'string', url: 'string', line: optional('number'), lines: [{ number: 'number', text: 'string' }] };
}
