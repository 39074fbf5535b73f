import { badData } from '@floe/errors';

/**
 * Values of request bodies that JSON Schema alone cannot settle: tag lists (an array or the
 * comma-separated form), custom field maps, calendar dates, and estimates written as text
 * ("2d 4h", "90m", "3p").
 */

/**
 * A calendar date YYYY-MM-DD that PostgreSQL's date type holds (years 1 to 9999; there is no
 * year 0), or null. Checked here so an impossible date is a 400, not a database error.
 */
export function parseDate(field: string, v: string | null): string | null {
  if (v === null) return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  const [year, month, day] = m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [0, 0, 0];
  if (!m || year < 1 || month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) {
    throw badData(`${field} must be a date YYYY-MM-DD`);
  }
  return v;
}

/**
 * Required text (a name, a comment's body) trimmed, refused when nothing is left: JSON Schema's
 * minLength counts spaces, so "   " passed it and became a record named "".
 */
export function nonBlank(field: string, v: string): string {
  const text = v.trim();
  if (text === '') throw badData(`${field} must not be empty`);
  return text;
}

export const MAX_TAGS = 50;
const MAX_TAG_LENGTH = 100;

/** Tags as given (array or "a, b"), trimmed, deduplicated, in order. */
export function parseTags(v: unknown): string[] {
  const list = typeof v === 'string' ? v.split(',') : v;
  if (!Array.isArray(list) || !list.every((t) => typeof t === 'string')) throw badData('tags must be an array of strings or a comma-separated string');
  const tags = [...new Set(list.map((t) => t.trim()).filter((t) => t !== ''))];
  if (tags.length > MAX_TAGS) throw badData(`tags: at most ${MAX_TAGS} tags`);
  const long = tags.find((t) => t.length > MAX_TAG_LENGTH);
  if (long !== undefined) throw badData(`tags: ${JSON.stringify(long.slice(0, 20))}… is longer than ${MAX_TAG_LENGTH} characters`);
  return tags;
}

export type CustomFieldValue = string | number | boolean | Array<string | number>;

const FIELD_KEY = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;
const MAX_FIELDS = 100;
const MAX_VALUE_LENGTH = 10_000;

/**
 * A custom field patch: key → value, where null removes the key. Values are strings, numbers,
 * booleans or arrays of strings and numbers (a multi-select).
 */
export function parseCustomFields(v: unknown): Map<string, CustomFieldValue | null> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badData('custom_fields must be an object of field key to value');
  const entries = Object.entries(v);
  if (entries.length > MAX_FIELDS) throw badData(`custom_fields: at most ${MAX_FIELDS} fields`);
  const out = new Map<string, CustomFieldValue | null>();
  for (const [key, value] of entries) {
    if (!FIELD_KEY.test(key)) throw badData(`custom_fields: invalid key ${JSON.stringify(key.slice(0, 70))} (letters, digits, _ and -, at most 64)`);
    if (!isFieldValue(value)) throw badData(`custom_fields.${key} must be a string, number, boolean, array of strings or numbers, or null`);
    if (JSON.stringify(value).length > MAX_VALUE_LENGTH) throw badData(`custom_fields.${key} is longer than ${MAX_VALUE_LENGTH} characters`);
    out.set(key, value);
  }
  return out;
}

function isFieldValue(v: unknown): v is CustomFieldValue | null {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  return Array.isArray(v) && v.every((x) => typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x)));
}

/** The stored map after a patch (null removes a key). */
export function mergeCustomFields(stored: Readonly<Record<string, CustomFieldValue>>, patch: ReadonlyMap<string, CustomFieldValue | null>): Record<string, CustomFieldValue> {
  // Merged in a Map, not by assignment: `out["__proto__"] = v` sets the object's prototype (or
  // nothing), so a field of that key, valid by FIELD_KEY, was dropped while the answer was 200.
  const out = new Map(Object.entries(stored));
  for (const [k, v] of patch) {
    if (v === null) out.delete(k);
    else out.set(k, v);
  }
  if (out.size > MAX_FIELDS) throw badData(`custom_fields: at most ${MAX_FIELDS} fields per record`);
  return Object.fromEntries(out);
}

// Minutes per unit; a day is a working day of 8 hours. Points ("p") are kept as their count.
const UNIT_MINUTES: Record<string, number> = { d: 480, h: 60, m: 1 };

/**
 * An estimate written as text: "2d 4h 30m" (minutes, a day being 8 hours), "3p" (points), or a
 * plain number (minutes). Undefined when the text is none of these.
 */
export function parseEstimateText(text: string): number | undefined {
  const t = text.trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  const points = /^(\d+(?:\.\d+)?)\s*p$/.exec(t);
  if (points) return Number(points[1]);
  if (!/^(?:\d+(?:\.\d+)?\s*[dhm]\s*)+$/.test(t)) return undefined;
  const parts = [...t.matchAll(/(\d+(?:\.\d+)?)\s*([dhm])/g)];
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MINUTES[p[2]!]!, 0);
}
