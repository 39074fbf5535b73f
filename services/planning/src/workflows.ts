/**
 * Workflows: every product gets an ordered list of statuses per record kind when it is created,
 * and records start in the first one. Spec 3 defines no transitions ("Transitions: not shown"),
 * so an update may move a record to any status of its product's workflow; each move closes the
 * open entry of workflow_status_times and opens one for the new status.
 */

export type WorkflowRecordKind = 'feature' | 'epic' | 'release';

export interface DefaultStatus {
  name: string;
  complete: boolean;
  color: string;
}

const FEATURE_STATUSES: readonly DefaultStatus[] = [
  { name: 'Under consideration', complete: false, color: '#dce5f5' },
  { name: 'Ready to develop', complete: false, color: '#c7e3f0' },
  { name: 'In development', complete: false, color: '#fbd8a2' },
  { name: 'Ready to ship', complete: false, color: '#d5ecb8' },
  { name: 'Shipped', complete: true, color: '#a3d57e' },
  { name: 'Will not implement', complete: true, color: '#cccccc' },
];

export const DEFAULT_WORKFLOWS: Readonly<Record<WorkflowRecordKind, readonly DefaultStatus[]>> = {
  feature: FEATURE_STATUSES,
  epic: FEATURE_STATUSES,
  release: [
    { name: 'Planned', complete: false, color: '#dce5f5' },
    { name: 'In progress', complete: false, color: '#fbd8a2' },
    { name: 'Released', complete: true, color: '#a3d57e' },
  ],
};

/** Kinds of work a feature may be (workflow_kind). */
export const DEFAULT_WORKFLOW_KINDS: readonly string[] = ['New', 'Improvement', 'Bug fix', 'Research'];

export interface StatusTime {
  status_id: string;
  status_name: string;
  started_at: string;
  ended_at: string | null;
}

/** The history after a move to `status` at `at` (ISO timestamp); unchanged when it is the current one. */
export function statusTimesAfter(times: readonly StatusTime[], status: { id: string; name: string }, at: string): StatusTime[] {
  const open = times.find((t) => t.ended_at === null);
  if (open?.status_id === status.id) return [...times];
  return [...times.map((t) => (t.ended_at === null ? { ...t, ended_at: at } : t)), { status_id: status.id, status_name: status.name, started_at: at, ended_at: null }];
}
