import { badData } from '@floe/errors';

/**
 * The query parameters of the list endpoints (spec 3, "Filter semantics" and Limits), checked
 * once and turned into typed values. Every problem is a 400 naming the parameter; nothing a
 * client sends reaches SQL except as a bound parameter.
 */
export interface ListParams {
  page: number;
  perPage: number;
  /** Case-insensitive substring of the record name. */
  q?: string;
  /** Only records updated strictly after this instant. */
  updatedSince?: Date;
  tag?: string;
  assignedToUser?: UserSelector;
  /** Release workflow status name (case-insensitive). */
  status?: string;
  parkingLot?: boolean;
  /** Names of the fields to return (`fields=a,b`); undefined: every field. */
  fields?: string[];
}

export type UserSelector = { by: 'id'; id: string } | { by: 'email'; email: string };

export type ListParamName = 'page' | 'per_page' | 'q' | 'updated_since' | 'tag' | 'assigned_to_user' | 'status' | 'parking_lot' | 'fields';

export const MAX_PER_PAGE = 200;
export const DEFAULT_PER_PAGE = 30;
const MAX_TEXT = 200;

export interface ListParamOptions {
  /** Parameters this endpoint takes; any other is refused. */
  accepted: readonly ListParamName[];
  /** per_page when absent (30; 20 for a product's releases). */
  defaultPerPage?: number;
  /** Field names `fields` may list. */
  fieldNames?: readonly string[];
}

export function parseListParams(query: Readonly<Record<string, unknown>>, opts: ListParamOptions): ListParams {
  const accepted = new Set<string>(opts.accepted);
  for (const name of Object.keys(query)) {
    if (!accepted.has(name)) throw badData(`unknown query parameter ${JSON.stringify(name)}; this endpoint takes ${opts.accepted.join(', ')}`);
  }
  const text = (name: string): string | undefined => {
    const v = query[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw badData(`${name} must be given once`);
    if (v.length > MAX_TEXT) throw badData(`${name} must be at most ${MAX_TEXT} characters`);
    if (v.includes('\0')) throw badData(`${name} must not contain NUL characters`);
    return v;
  };
  const out: ListParams = {
    page: positiveInt('page', text('page'), 1, Number.MAX_SAFE_INTEGER),
    perPage: positiveInt('per_page', text('per_page'), opts.defaultPerPage ?? DEFAULT_PER_PAGE, MAX_PER_PAGE),
  };
  const q = text('q')?.trim();
  if (q) out.q = q;
  const since = text('updated_since');
  if (since !== undefined) out.updatedSince = parseTimestamp('updated_since', since);
  const tag = text('tag')?.trim();
  if (tag) out.tag = tag;
  const user = text('assigned_to_user');
  if (user !== undefined) out.assignedToUser = parseUserSelector('assigned_to_user', user);
  const status = text('status')?.trim();
  if (status) out.status = status;
  const lot = text('parking_lot');
  if (lot !== undefined) out.parkingLot = parseBoolean('parking_lot', lot);
  const fields = text('fields');
  if (fields !== undefined) out.fields = parseFields(fields, opts.fieldNames ?? []);
  return out;
}

function positiveInt(name: string, v: string | undefined, dflt: number, max: number): number {
  if (v === undefined) return dflt;
  const n = /^[0-9]+$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > max) {
    throw badData(max === Number.MAX_SAFE_INTEGER ? `${name} must be an integer >= 1` : `${name} must be an integer from 1 to ${max}`);
  }
  return n;
}

export function parseBoolean(name: string, v: string): boolean {
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw badData(`${name} must be true or false`);
}

// ISO 8601 calendar date, optionally with a time and a zone; without a zone the time is UTC, as
// the spec defines updated_since as a UTC timestamp.
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** An ISO 8601 timestamp (a date alone is its midnight UTC). */
export function parseTimestamp(name: string, v: string): Date {
  const m = ISO_TIMESTAMP.exec(v.trim());
  const bad = () => badData(`${name} must be an ISO 8601 timestamp such as 2024-05-01T12:00:00Z`);
  if (!m) throw bad();
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate() || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) throw bad();
  const ms = frac.slice(0, 3).padEnd(3, '0');
  const z = zone.toUpperCase() === 'Z' ? 'Z' : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const at = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}${z}`);
  if (Number.isNaN(at.getTime())) throw bad();
  // The instant travels to SQL as toISOString(), which PostgreSQL only reads for years 1 to 9999
  // (year 0, or "+010000-…" after a zone shift, failed in the database as a 500).
  if (at < MIN_TIMESTAMP || at > MAX_TIMESTAMP) throw badData(`${name} must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z`);
  return at;
}

const MIN_TIMESTAMP = new Date('0001-01-01T00:00:00.000Z');
const MAX_TIMESTAMP = new Date('9999-12-31T23:59:59.999Z');

const USER_ID = /^[0-9a-f]{16}$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** A Floe user named by id (16 hex digits) or email address. */
export function parseUserSelector(name: string, v: string): UserSelector {
  const t = v.trim();
  if (USER_ID.test(t)) return { by: 'id', id: t };
  if (EMAIL.test(t)) return { by: 'email', email: t.toLowerCase() };
  throw badData(`${name} must be a user id or an email address`);
}

function parseFields(v: string, known: readonly string[]): string[] {
  const names = v.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (names.length === 0) throw badData('fields must name at least one field');
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length > 0) throw badData(`fields: unknown field ${unknown.map((n) => JSON.stringify(n)).join(', ')}; known: ${known.join(', ')}`);
  return [...new Set(names)];
}
