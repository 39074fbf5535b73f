import type { LabelMatch } from '../ir/logs.ts';
import { attributeText } from '../sql/log-labels.ts';
import type { SqlBuilder } from '../sql/printer.ts';

/**
 * Label resolution for the profiles table (@floe/schema profiles.ts):
 *
 * | label              | resolves to                                         |
 * |--------------------|-----------------------------------------------------|
 * | service_name       | column service_name                                 |
 * | __name__           | the name part of column profile_type (`process_cpu`) |
 * | __profile_type__   | column profile_type (the five-part id)              |
 * | a materialized label | its column (ColumnDef.attributeKey is the label exactly) |
 * | any other label    | the profile's typed attribute maps, then the resource's, by exact key |
 *
 * Values compare as text (ints as decimals, bools as true/false) with Prometheus semantics: an
 * absent label is "", so `!=`, `!~` and matchers accepting "" also match profiles without it.
 * Regexes are RE2 (DuckDB's engine, as Prometheus's) anchored at both ends.
 */

export const PROFILE_ATTRIBUTE_SCOPES = ['profile', 'resource'] as const;
export const PROFILE_ATTRIBUTE_TYPES = ['str', 'int', 'double', 'bool'] as const;
export const profileAttributeMap = (scope: (typeof PROFILE_ATTRIBUTE_SCOPES)[number], type: (typeof PROFILE_ATTRIBUTE_TYPES)[number]) => `${scope}_attr_${type}`;

/** Labels every profile has, which are not attributes. */
export const NAME_LABEL = '__name__';
export const PROFILE_TYPE_LABEL = '__profile_type__';
export const SERVICE_LABEL = 'service_name';

/** The label's value as text, '' when the profile does not carry it (never NULL). */
export function profileLabelText(b: SqlBuilder, label: string): string {
  if (label === SERVICE_LABEL) return `coalesce(${b.column('service_name')}, '')`;
  if (label === PROFILE_TYPE_LABEL) return `coalesce(${b.column('profile_type')}, '')`;
  if (label === NAME_LABEL) return `split_part(coalesce(${b.column('profile_type')}, ''), ':', 1)`;
  const column = labelColumnOf(b, label);
  // The column holds the same value as the maps would give (profile, then resource, as text), read once.
  if (column) return `coalesce(${b.column(column)}, '')`;
  return attributeText(b, label, PROFILE_ATTRIBUTE_SCOPES);
}

/** The materialized label column of an attribute key, when the caller's table has one. */
const labelColumnOf = (b: SqlBuilder, label: string) => b.table.columns.find((c) => c.attributeKey === label)?.name;

/**
 * One matcher as a condition; equality on service_name or a materialized label column stays on
 * the bare column so Parquet statistics prune.
 */
export function profileMatchSql(b: SqlBuilder, m: LabelMatch): string {
  const bare = m.label === SERVICE_LABEL ? 'service_name' : m.label === NAME_LABEL || m.label === PROFILE_TYPE_LABEL ? undefined : labelColumnOf(b, m.label);
  if (bare !== undefined && m.value !== '' && (m.op === '=' || m.op === '!=')) {
    const col = b.column(bare);
    return m.op === '=' ? `${col} = ${b.param(m.value)}` : `${col} IS DISTINCT FROM ${b.param(m.value)}`;
  }
  const text = profileLabelText(b, m.label);
  switch (m.op) {
    case '=':
      return `${text} = ${b.param(m.value)}`;
    case '!=':
      return `${text} <> ${b.param(m.value)}`;
    case '=~':
      return `regexp_full_match(${text}, ${b.param(m.value)})`;
    case '!~':
      return `NOT regexp_full_match(${text}, ${b.param(m.value)})`;
  }
}
