/**
 * Reference numbers, the human keys of planning records, built from the product's
 * reference_prefix and a per-product counter: features `PRJ1-12`, releases `PRJ1-R-3`, epics
 * `PRJ1-E-2`, initiatives `PRJ1-I-1`, goals `PRJ1-G-1`, ideas `PRJ1-IDEA-1` (a word, as `I` is
 * taken by initiatives); a requirement extends its feature's number (`PRJ1-12-1`). Every path
 * parameter that names a record takes its numeric id or its reference number (spec 3, "numeric
 * id, or key"); a product's key is its prefix.
 */

export const REFERENCE_PREFIX_PATTERN = /^[A-Z][A-Z0-9]{0,9}$/;

export type NumberedKind = 'feature' | 'release' | 'epic' | 'initiative' | 'goal' | 'idea';

const INFIX: Record<NumberedKind, string> = { feature: '', release: 'R-', epic: 'E-', initiative: 'I-', goal: 'G-', idea: 'IDEA-' };

export function referenceNumber(kind: NumberedKind, prefix: string, n: number): string {
  return `${prefix}-${INFIX[kind]}${n}`;
}

export function requirementReference(featureReference: string, n: number): string {
  return `${featureReference}-${n}`;
}

/** How a path parameter names a record. */
export type RecordRef = { by: 'id'; id: string } | { by: 'reference'; reference: string };

// Ids come from a PostgreSQL bigint sequence: 18 digits always fit, so a longer number is no id
// (and must not reach the database as an out-of-range bigint).
const ID_PATTERN = /^[1-9][0-9]{0,17}$/;
// Prefix, then the kind's infix (none, one letter, or IDEA), then the number (and a requirement's).
const REFERENCE_PATTERN = /^[A-Z][A-Z0-9]{0,9}(?:-(?:[A-Z]|IDEA))?(?:-[0-9]{1,9}){1,2}$/;

/**
 * The id or reference number a parameter holds, or undefined when it can be neither (the caller
 * answers 404, as for an id that names nothing). Reference numbers are matched case-insensitively.
 */
export function parseRecordRef(value: string): RecordRef | undefined {
  if (ID_PATTERN.test(value)) return { by: 'id', id: value };
  const upper = value.toUpperCase();
  if (REFERENCE_PATTERN.test(upper)) return { by: 'reference', reference: upper };
  return undefined;
}

/** A product is named by its id or its reference_prefix. */
export function parseProductRef(value: string): { by: 'id'; id: string } | { by: 'prefix'; prefix: string } | undefined {
  if (ID_PATTERN.test(value)) return { by: 'id', id: value };
  const upper = value.toUpperCase();
  if (REFERENCE_PREFIX_PATTERN.test(upper)) return { by: 'prefix', prefix: upper };
  return undefined;
}
