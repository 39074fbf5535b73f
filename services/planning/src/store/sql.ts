import type { Db } from '@floe/meta';
import { pageWindow } from '../params/pagination.ts';

/**
 * SQL shared by the planning repositories. Records are shaped into their JSON form by the
 * database (jsonb_build_object), so both backends (PGlite, PostgreSQL) hand back the same
 * strings: ids as text (bigints would lose digits as JS numbers), timestamps as ISO 8601 UTC with
 * milliseconds, dates as YYYY-MM-DD (never a JS Date at local midnight).
 *
 * Every statement is built from these fixed fragments plus `$n` placeholders; user values only
 * ever travel as parameters, and `Where` starts every filter with the tenant predicate.
 */

/** ISO 8601 UTC with milliseconds, or NULL. */
export const ts = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** YYYY-MM-DD, or NULL. */
export const day = (col: string) => `to_char(${col}, 'YYYY-MM-DD')`;

/** The user object of spec 3 (id, name, email, created_at, updated_at) for a users.id column. */
export const userJson = (idCol: string) => `(SELECT jsonb_build_object(
    'id', u.id, 'name', CASE WHEN u.display_name = '' THEN u.email ELSE u.display_name END, 'email', u.email,
    'created_at', ${ts('u.created_at')}, 'updated_at', ${ts('u.created_at')})
  FROM users u WHERE u.id = ${idCol})`;

/**
 * Who created a record: the Floe user, or, for an API key caller (a key acts for no user), a user
 * object standing for the key (id: the key id, name "API key <id>", email empty).
 */
export const authorJson = (userCol: string, keyCol: string) =>
  `COALESCE(${userJson(userCol)}, CASE WHEN ${keyCol} IS NOT NULL THEN jsonb_build_object('id', ${keyCol}, 'name', 'API key ' || ${keyCol}, 'email', '') END)`;

/** full_tags: {id, name, color} of each tag of the record, in the record's order. */
export const fullTagsJson = (alias: string) => `(SELECT COALESCE(jsonb_agg(jsonb_build_object('id', t.id::text, 'name', t.name, 'color', t.color) ORDER BY array_position(${alias}.tags, t.name)), '[]'::jsonb)
  FROM planning_tags t WHERE t.tenant_id = ${alias}.tenant_id AND t.name = ANY(${alias}.tags))`;

/** custom_fields as a list of {key, name, value, type}, sorted by key. */
export const customFieldsJson = (alias: string) => `(SELECT COALESCE(jsonb_agg(jsonb_build_object('key', c.key, 'name', c.key, 'value', c.value,
    'type', CASE jsonb_typeof(c.value) WHEN 'array' THEN 'array' WHEN 'number' THEN 'number' WHEN 'boolean' THEN 'boolean' ELSE 'string' END) ORDER BY c.key), '[]'::jsonb)
  FROM jsonb_each(${alias}.custom_fields) c)`;

export const descriptionJson = (alias: string) =>
  `jsonb_build_object('id', ${alias}.description_id::text, 'body', ${alias}.description, 'created_at', ${ts(`${alias}.description_created_at`)}, 'updated_at', ${ts(`${alias}.description_updated_at`)}, 'attachments', '[]'::jsonb)`;

/** The product as embedded in its records (`project`). */
export const projectJson = (alias: string) =>
  `jsonb_build_object('id', ${alias}.id::text, 'reference_prefix', ${alias}.reference_prefix, 'name', ${alias}.name, 'product_line', ${alias}.product_line, 'created_at', ${ts(`${alias}.created_at`)}, 'workspace_type', ${alias}.workspace_type)`;

export const workflowStatusJson = (alias: string) =>
  `CASE WHEN ${alias}.id IS NULL THEN NULL ELSE jsonb_build_object('id', ${alias}.id::text, 'name', ${alias}.name, 'position', ${alias}.position, 'complete', ${alias}.complete, 'color', ${alias}.color) END`;

/** The release summary embedded in features and epics. */
export const releaseSummaryJson = (alias: string) => `CASE WHEN ${alias}.id IS NULL THEN NULL ELSE jsonb_build_object(
    'id', ${alias}.id::text, 'reference_num', ${alias}.reference_num, 'name', ${alias}.name,
    'start_date', ${day(`${alias}.start_date`)}, 'release_date', ${day(`${alias}.release_date`)},
    'external_release_date', ${day(`${alias}.external_release_date`)}, 'released_on', ${day(`${alias}.released_on`)},
    'parking_lot', ${alias}.parking_lot, 'product_id', ${alias}.product_id::text,
    'created_at', ${ts(`${alias}.created_at`)}, 'updated_at', ${ts(`${alias}.updated_at`)}) END`;

/** A release phase as a release lists it and a feature names it (spec 3: {id, name, start_date, end_date, position}). */
const phaseObject = (alias: string) =>
  `jsonb_build_object('id', ${alias}.id::text, 'name', ${alias}.name, 'start_date', ${day(`${alias}.start_date`)}, 'end_date', ${day(`${alias}.end_date`)}, 'position', ${alias}.position)`;

/** A release's phases in order. */
export const releasePhasesJson = (alias: string) =>
  `(SELECT COALESCE(jsonb_agg(${phaseObject('ph')} ORDER BY ph.position, ph.id), '[]'::jsonb) FROM planning_release_phases ph WHERE ph.release_id = ${alias}.id)`;

/** The phase a column names, or null. */
export const releasePhaseJson = (idCol: string) => `(SELECT ${phaseObject('ph')} FROM planning_release_phases ph WHERE ph.id = ${idCol})`;

/** Comments on one record. */
export const commentsCount = (kind: string, alias: string) =>
  `(SELECT count(*)::int FROM planning_comments c WHERE c.tenant_id = ${alias}.tenant_id AND c.parent_kind = '${kind}' AND c.parent_id = ${alias}.id)`;

/** Goals linked to a record through a link table: [{id, reference_num, name}]. */
export const goalsJson = (linkTable: 'planning_feature_goals' | 'planning_epic_goals', linkCol: 'feature_id' | 'epic_id', alias: string) => `(SELECT COALESCE(jsonb_agg(jsonb_build_object('id', g.id::text, 'reference_num', g.reference_num, 'name', g.name) ORDER BY g.id), '[]'::jsonb)
  FROM ${linkTable} l JOIN planning_goals g ON g.id = l.goal_id WHERE l.${linkCol} = ${alias}.id)`;

/**
 * A WHERE clause under construction: the tenant predicate first, then filters; each value becomes
 * the next `$n` parameter.
 */
export class Where {
  readonly params: unknown[] = [];
  readonly #clauses: string[] = [];

  constructor(alias: string, tenantId: string) {
    this.#clauses.push(`${alias}.tenant_id = ${this.param(tenantId)}`);
  }

  /** Adds a parameter and returns its placeholder. */
  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  /** Adds a clause built around placeholders from param(). */
  and(clause: string): this {
    this.#clauses.push(clause);
    return this;
  }

  toString(): string {
    return `WHERE ${this.#clauses.join(' AND ')}`;
  }
}

/** A LIKE pattern matching `text` anywhere, with the pattern characters of the text escaped. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Which page of a list (both counted from 1; list-params.ts validates them). */
export interface PageOf {
  page: number;
  perPage: number;
}

/**
 * A page of a list and the length of the whole list: `select` (the records' SELECT ... FROM with
 * its alias) and `from` (what the count reads: the same table and alias, with any join the
 * filters need) both take `where`; `orderBy` must order the records totally (a page's rows then
 * never change pages between requests that see the same data).
 */
export async function listPage<T>(
  db: Db,
  q: { select: string; from: string; where: Where; orderBy: string },
  which: PageOf,
): Promise<{ records: T[]; total: number }> {
  const window = pageWindow(which.page, which.perPage);
  const params = q.where.params;
  const n = params.length;
  const [page, count] = await Promise.all([
    db.query<T>(`${q.select} ${q.where} ORDER BY ${q.orderBy} LIMIT $${n + 1} OFFSET $${n + 2}`, [...params, window.limit, window.offset]),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${q.from} ${q.where}`, params),
  ]);
  return { records: page.rows, total: count.rows[0]?.n ?? 0 };
}
