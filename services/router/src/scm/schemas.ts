import { ERROR_RESPONSES, tenantIdSchema } from '../management/schemas.ts';
import { UNAVAILABLE_REASONS, DEFAULT_CONTEXT_LINES, MAX_CONTEXT_LINES } from './source-context.ts';
import { scmInstallationSchema } from './wire.ts';

/** JSON schemas of the source-control routes; the error envelope is the management API's. */
export { ERROR_RESPONSES };

export const TAGS = ['source-control'];

const installationIdParam = { type: 'string', pattern: '^[1-9][0-9]{0,15}$', description: 'Installation id on the host.' } as const;

export const tenantParams = { type: 'object', additionalProperties: false, required: ['tenant_id'], properties: { tenant_id: tenantIdSchema } } as const;
export const installationParams = {
  type: 'object',
  additionalProperties: false,
  required: ['tenant_id', 'installation_id'],
  properties: { tenant_id: tenantIdSchema, installation_id: installationIdParam },
} as const;

export const linkResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['install_url', 'expires_at'],
  properties: {
    install_url: { type: 'string', description: 'Open in a browser signed in to Floe: installs (or reconfigures) the app on the host, then returns through /ui/scm/callback.' },
    expires_at: { type: 'string', format: 'date-time', description: 'The single-use state token in install_url is refused after this (scm.link_state_ttl).' },
  },
} as const;

export const listResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['configured', 'stale', 'installations'],
  properties: {
    configured: { type: 'boolean', enum: [true] },
    stale: { type: 'boolean', description: 'The host could not be reached for at least one installation; its last known repositories are shown.' },
    installations: { type: 'array', items: scmInstallationSchema },
  },
} as const;

export const attachBody = {
  type: 'object',
  additionalProperties: false,
  required: ['installation_id'],
  properties: { installation_id: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } },
} as const;

export { scmInstallationSchema };

/** The longest code, installation id and state the callback takes (longer ones fail its checks). */
export const CALLBACK_PARAM_LIMITS = { code: 512, installation_id: 32, state: 128 } as const;

export const callbackQuery = {
  type: 'object',
  // The host adds parameters of its own (setup_action); they are ignored, not refused. Nor are
  // repeated or oversized ones refused here: every callback failure is a redirect with a reason
  // (spec 2, Errors), never a JSON body, so the handler judges them (installation-routes.ts).
  additionalProperties: true,
  properties: {
    code: { description: `The host's OAuth code (at most ${CALLBACK_PARAM_LIMITS.code} characters).` },
    installation_id: { description: 'The installation the host set up.' },
    state: { description: 'The single-use state token of install_url.' },
  },
} as const;

export const sourceContextBody = {
  type: 'object',
  additionalProperties: false,
  required: ['path'],
  properties: {
    repository: { type: 'string', minLength: 1, maxLength: 512, description: 'owner/name or a URL of the repository. Absent: the first 25 linked repositories are probed.' },
    ref: { type: 'string', minLength: 1, maxLength: 255, description: 'Branch, tag or commit. Absent: the default branch (the answer then has ref null).' },
    path: { type: 'string', minLength: 1, maxLength: 4096, description: 'Path of the file inside the repository.' },
    line: { type: 'integer', description: '1-based line the window is centred on. Absent: the top of the file.' },
    // No maximum: a lookup answers 200 (spec 2, Errors), so a wider window is cut, not refused.
    context_lines: { type: 'integer', minimum: 0, default: DEFAULT_CONTEXT_LINES, description: `Lines shown on each side of line; more than ${MAX_CONTEXT_LINES} are shown as ${MAX_CONTEXT_LINES}.` },
  },
} as const;

export const sourceContextResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['status'],
  description: 'status `available` with the snippet, or `unavailable` with a reason; never an error status.',
  properties: {
    status: { type: 'string', enum: ['available', 'unavailable'] },
    reason: { type: 'string', enum: [...UNAVAILABLE_REASONS] },
    repository: { type: 'string', description: 'owner/name of the repository that served the file.' },
    ref: { type: ['string', 'null'], description: 'The ref asked for; null when the default branch was read.' },
    path: { type: 'string' },
    url: { type: 'string', description: 'Link to the file (and line) on the host.' },
    line: { type: ['integer', 'null'] },
    start_line: { type: 'integer' },
    lines: {
      type: 'array',
      items: { type: 'object', additionalProperties: false, required: ['number', 'text'], properties: { number: { type: 'integer' }, text: { type: 'string' } } },
    },
  },
} as const;

export const sourceContextStatus = {
  type: 'object',
  additionalProperties: false,
  required: ['configured', 'linked'],
  properties: {
    configured: { type: 'boolean', description: 'The scm section is set.' },
    linked: { type: 'boolean', description: 'The tenant has at least one linked installation.' },
  },
} as const;
