import { FloeError } from '@floe/errors';
import type { RuleGroup } from './model.ts';

/**
 * The model's storage form in the metadata DB (a jsonb `definition`): the model itself plus a
 * format version `v`. Only groups that passed parseRuleFile / parseRuleGroup are stored, by Floe,
 * so reading one back checks the version and the shape, not every field again; a row that does
 * not read is Floe's fault (`internal`), not the client's. (jsonb compares objects regardless of
 * key order, so an unchanged group resubmitted compares equal.)
 */

export const RULE_GROUP_JSON_VERSION = 1;

export type RuleGroupJson = { v: typeof RULE_GROUP_JSON_VERSION } & RuleGroup;

export function ruleGroupToJson(g: RuleGroup): RuleGroupJson {
  return { v: RULE_GROUP_JSON_VERSION, ...g };
}

/** A stored group back, from the parsed JSON value (as a jsonb column reads) or its text. */
export function ruleGroupFromJson(stored: unknown): RuleGroup {
  let value = stored;
  if (typeof stored === 'string') {
    try {
      value = JSON.parse(stored) as unknown;
    } catch (err) {
      throw malformed(`not JSON (${(err as Error).message})`);
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw malformed('not an object');
  const { v, ...group } = value as Partial<RuleGroupJson>;
  if (v !== RULE_GROUP_JSON_VERSION) throw malformed(`unknown version ${JSON.stringify(v)} (this Floe reads ${RULE_GROUP_JSON_VERSION})`);
  if (typeof group.name !== 'string' || !Array.isArray(group.rules)) throw malformed('no name or no rules');
  return group as RuleGroup;
}

function malformed(detail: string): FloeError {
  return new FloeError('internal', `stored rule group is malformed: ${detail}`, { code: 'FLOE_ERR_RULES_STORED' });
}
