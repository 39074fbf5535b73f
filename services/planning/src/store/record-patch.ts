import { notFound } from '@floe/errors';
import type { Db } from '@floe/meta';
import { mergeCustomFields, nonBlank, parseCustomFields, parseDate, parseTags, type CustomFieldValue } from '../params/values.ts';
import { statusTimesAfter, type StatusTime, type WorkflowRecordKind } from '../workflows.ts';
import type { Actor } from './actor.ts';
import { ensureTags, resolveInProduct, resolveMember, resolveStatus, type StatusChoice } from './lookups.ts';

/**
 * Turning a validated create/update body into column assignments. Releases, features and epics
 * share most of their writable fields (name, description, people, tags, custom fields, workflow
 * status, progress); what is particular to each is added by its repository. Column names are
 * constants of this code; every value is a bound parameter.
 */
export class Assignments {
  readonly params: unknown[];
  readonly #sets: string[] = [];

  /** `params` may already hold the statement's leading parameters (tenant, id). */
  constructor(params: unknown[]) {
    this.params = params;
  }

  /** A date column from a body field (checked to be a real calendar date). */
  setDate(column: string, value: string | null): this {
    return this.set(column, parseDate(column, value), '::date');
  }

  set(column: string, value: unknown, cast = ''): this {
    this.params.push(value);
    this.#sets.push(`${column} = $${this.params.length}${cast}`);
    return this;
  }

  get columns(): string[] {
    return this.#sets.map((s) => s.slice(0, s.indexOf(' =')));
  }

  get empty(): boolean {
    return this.#sets.length === 0;
  }

  toString(): string {
    return this.#sets.join(', ');
  }
}

/** Body fields every planning record with a workflow shares (spec 3 create/update bodies). */
export interface CommonFields {
  name?: string;
  description?: string | { body?: string };
  assigned_to_user?: string | null;
  assigned_to_user_id?: string | null;
  tags?: string | string[];
  custom_fields?: Record<string, unknown>;
  workflow_status?: StatusChoice | string;
  progress?: number;
  progress_source?: string;
}

/** The stored state a patch is applied to (absent on create). */
export interface CurrentState {
  workflowStatusId: string | null;
  workflowStatusTimes: StatusTime[];
  customFields: Record<string, CustomFieldValue>;
}

export async function assignCommonFields(
  tx: Db,
  actor: Actor,
  target: { productId: string; kind: WorkflowRecordKind; current: CurrentState; now: string },
  body: CommonFields,
  set: Assignments,
): Promise<void> {
  if (body.name !== undefined) {
    set.set('name', nonBlank('name', body.name));
  }
  if (body.description !== undefined) {
    set.set('description', typeof body.description === 'string' ? body.description : (body.description.body ?? ''));
    set.set('description_updated_at', target.now, '::timestamptz');
  }
  const assignee = body.assigned_to_user !== undefined ? body.assigned_to_user : body.assigned_to_user_id;
  if (assignee !== undefined) {
    set.set('assigned_to_user_id', assignee === null ? null : await resolveMember(tx, actor.tenantId, 'assigned_to_user', assignee));
  }
  if (body.tags !== undefined) {
    const tags = parseTags(body.tags);
    await ensureTags(tx, actor.tenantId, tags);
    set.set('tags', tags, '::text[]');
  }
  if (body.custom_fields !== undefined) {
    const merged = mergeCustomFields(target.current.customFields, parseCustomFields(body.custom_fields));
    set.set('custom_fields', JSON.stringify(merged), '::jsonb');
  }
  if (body.workflow_status !== undefined) {
    const choice = typeof body.workflow_status === 'string' ? { name: body.workflow_status } : body.workflow_status;
    const status = await resolveStatus(tx, actor.tenantId, target.productId, target.kind, choice);
    assignStatus(set, target.current, status, target.now);
  }
  if (body.progress !== undefined) set.set('progress', Math.round(body.progress));
  if (body.progress_source !== undefined) set.set('progress_source', body.progress_source);
}

/** Moves the record to `status` (no-op when it is there), recording the time of the move. */
export function assignStatus(set: Assignments, current: CurrentState, status: { id: string; name: string }, now: string): void {
  if (current.workflowStatusId === status.id) return;
  set.set('workflow_status_id', status.id, '::bigint');
  set.set('status_changed_on', now.slice(0, 10), '::date');
  set.set('workflow_status_times', JSON.stringify(statusTimesAfter(current.workflowStatusTimes, status, now)), '::jsonb');
}

export const NO_STATE: CurrentState = { workflowStatusId: null, workflowStatusTimes: [], customFields: {} };

/** Reads the state a patch needs and locks the row for the rest of the transaction. */
export async function lockCurrent(tx: Db, table: 'planning_releases' | 'planning_features' | 'planning_epics', tenantId: string, id: string): Promise<CurrentState & { productId: string }> {
  const { rows } = await tx.query<{ product_id: string; workflow_status_id: string | null; workflow_status_times: StatusTime[]; custom_fields: Record<string, CustomFieldValue> }>(
    `SELECT product_id::text AS product_id, workflow_status_id::text AS workflow_status_id, workflow_status_times, custom_fields
     FROM ${table} WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
    [tenantId, id],
  );
  const r = rows[0];
  // Deleted between lookup and lock (a concurrent DELETE).
  if (!r) throw notFound(`record ${id} not found`);
  return { productId: r.product_id, workflowStatusId: r.workflow_status_id, workflowStatusTimes: r.workflow_status_times, customFields: r.custom_fields };
}

/** Replaces the goals linked to a feature or epic. */
export async function linkGoals(tx: Db, tenantId: string, productId: string, id: string, goals: ReadonlyArray<string | number>, table: 'planning_feature_goals' | 'planning_epic_goals', col: 'feature_id' | 'epic_id'): Promise<void> {
  const ids: string[] = [];
  for (const g of goals) ids.push(await resolveInProduct(tx, 'planning_goals', tenantId, productId, 'goals', g));
  await tx.query(`DELETE FROM ${table} WHERE tenant_id = $1 AND ${col} = $2`, [tenantId, id]);
  if (ids.length > 0) {
    await tx.query(`INSERT INTO ${table} (tenant_id, ${col}, goal_id) SELECT $1, $2, g FROM unnest($3::bigint[]) AS g ON CONFLICT DO NOTHING`, [tenantId, id, ids]);
  }
}
