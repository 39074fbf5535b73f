import type { ListParamName } from './list-params.ts';

/**
 * JSON Schemas of the planning API's requests, written once: fastify checks every body, path and
 * query with them (no type coercion, unknown fields refused) before a handler runs. Bodies wrap
 * the record in its kind (`{feature: {...}}`), as spec 3 shows.
 */

const text = (max: number) => ({ type: 'string', maxLength: max }) as const;
const name = { type: 'string', minLength: 1, maxLength: 255 } as const;
const date = { type: ['string', 'null'], format: 'date' } as const;
const ref = { anyOf: [{ type: 'string', minLength: 1, maxLength: 64 }, { type: 'integer', minimum: 1 }] } as const;
const nullableRef = { anyOf: [...ref.anyOf, { type: 'null' }] } as const;
const userRef = { type: ['string', 'null'], maxLength: 254 } as const;
const description = { anyOf: [text(100_000), { type: 'object', additionalProperties: false, properties: { body: text(100_000) } }] } as const;
const tags = { anyOf: [text(5_000), { type: 'array', maxItems: 50, items: text(100) }] } as const;
const customFields = { type: 'object' } as const;
const choice = {
  anyOf: [
    { type: 'string', minLength: 1, maxLength: 200 },
    { type: 'object', additionalProperties: false, minProperties: 1, properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, id: ref } },
  ],
} as const;
const progress = { type: 'number', minimum: 0, maximum: 100 } as const;
const progressSource = { type: 'string', pattern: '^progress_[a-z_]{1,60}$' } as const;
const estimate = { type: ['number', 'null'], minimum: 0 } as const;
const estimateText = text(50);
const score = { type: 'number', minimum: 0, maximum: 1_000_000 } as const;
const goals = { type: 'array', maxItems: 100, items: ref } as const;

const common = {
  name,
  description,
  assigned_to_user: userRef,
  tags,
  custom_fields: customFields,
  workflow_status: choice,
  progress,
  progress_source: progressSource,
} as const;

const wrap = (key: string, properties: Record<string, unknown>, required: readonly string[] = []) =>
  ({
    type: 'object',
    additionalProperties: false,
    required: [key],
    properties: { [key]: { type: 'object', additionalProperties: false, required, properties } },
  }) as const;

const featureFields = {
  ...common,
  workflow_kind: choice,
  release: ref,
  created_by: { type: 'string', maxLength: 254 },
  initial_estimate_text: estimateText,
  detailed_estimate_text: estimateText,
  remaining_estimate_text: estimateText,
  initial_estimate: estimate,
  detailed_estimate: estimate,
  remaining_estimate: estimate,
  start_date: date,
  due_date: date,
  initiative: nullableRef,
  epic: nullableRef,
  goals,
  score,
  release_phase: nullableRef,
  team: {},
  team_workflow_status: {},
  iteration: {},
  program_increment: {},
};

export const featureCreateBody = wrap('feature', featureFields, ['name']);
export const featureUpdateBody = wrap('feature', featureFields);
export const featureCustomFieldsBody = wrap('feature', { custom_fields: customFields }, ['custom_fields']);

const releaseFields = {
  ...common,
  theme: text(10_000),
  start_date: date,
  release_date: date,
  external_release_date: date,
  parking_lot: { type: 'boolean' },
  assigned_to_user_id: userRef,
  owner: userRef,
};

export const releaseCreateBody = wrap('release', releaseFields, ['name']);
export const releaseUpdateBody = wrap('release', { ...releaseFields, development_started_on: date, released_on: date });

const epicFields = {
  ...common,
  release: nullableRef,
  initiative: nullableRef,
  goals,
  start_date: date,
  due_date: date,
  score,
  duration_source: { type: 'string', pattern: '^duration_[a-z_]{1,60}$' },
};

export const epicCreateBody = wrap('epic', epicFields, ['name']);
export const epicUpdateBody = wrap('epic', epicFields);

const releasePhaseFields = { name, start_date: date, end_date: date, position: { type: 'integer', minimum: 1, maximum: 1_000_000 } };
export const releasePhaseCreateBody = wrap('release_phase', releasePhaseFields, ['name']);
export const releasePhaseUpdateBody = wrap('release_phase', releasePhaseFields);

const competitorFields = { name, description: text(100_000), strengths: text(100_000), weaknesses: text(100_000) };
export const competitorCreateBody = wrap('competitor', competitorFields, ['name']);
export const competitorUpdateBody = wrap('competitor', competitorFields);

export const productCreateBody = wrap(
  'product',
  {
    name,
    reference_prefix: { type: 'string', pattern: '^[A-Z][A-Z0-9]{0,9}$', description: 'Upper-case letter, then up to 9 upper-case letters or digits.' },
    description: text(100_000),
    product_line: { type: 'boolean' },
  },
  ['name', 'reference_prefix'],
);

export const requirementCreateBody = wrap('requirement', { name, description: text(100_000), workflow_status: choice }, ['name']);
export const toDoCreateBody = wrap('to_do', { name, body: text(100_000), status: { type: 'string', enum: ['pending', 'complete'] }, due_date: date }, ['name']);
export const productRecordCreateBody = (kind: 'goal' | 'initiative' | 'idea') => wrap(kind, { name, description: text(100_000) }, ['name']);

/** Spec 3 shows `{body}`; `{comment: {body}}`, the wrapped form of the other bodies, is taken too. */
const commentText = { type: 'string', minLength: 1, maxLength: 100_000 } as const;
export const commentBody = {
  anyOf: [
    { type: 'object', additionalProperties: false, required: ['body'], properties: { body: commentText } },
    { type: 'object', additionalProperties: false, required: ['comment'], properties: { comment: { type: 'object', additionalProperties: false, required: ['body'], properties: { body: commentText } } } },
  ],
} as const;

export const idParams = { type: 'object', additionalProperties: false, required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 64 } } } as const;

/**
 * `disable_mailers` (spec 3, create feature): accepted on every write. This service sends no
 * mail, so the flag changes nothing.
 */
export const writeQuery = { type: 'object', additionalProperties: false, properties: { disable_mailers: { type: 'string', enum: ['true', 'false'] } } } as const;

/** A list endpoint's query: the named parameters as single strings (parseListParams checks values). */
export const listQuery = (accepted: readonly ListParamName[]) => ({
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(accepted.map((n) => [n, { type: 'string' }])),
});
