import { rulesError } from './problems.ts';
import { checkGroups } from './validate.ts';
import { decodeRuleFile, decodeRuleGroup } from './yaml-decode.ts';
import { MAX_RULE_TEXT_BYTES, type RuleCheckOptions, type RuleGroup } from './model.ts';

/**
 * Prometheus / Loki rule groups for Floe's ruler: a rule file (`groups: [...]`) or one group (the
 * Cortex/Mimir and Loki ruler APIs' `POST /config/v1/rules/{namespace}` body) parsed, checked as
 * `promtool check rules` and Loki's ruler check them, and written back (YAML for the APIs, JSON
 * for the metadata DB). Every refusal is FloeError bad_data naming the group and rule.
 *
 * Pipeline: yaml-decode.ts (YAML → raw strings, strict fields) → validate.ts (raw → model, the
 * rulefmt checks and expression parsing) → to-yaml.ts / json.ts (model → text).
 */

export type { AlertingRule, RecordingRule, Rule, RuleCheckOptions, RuleGroup, RuleLanguage } from './model.ts';
export { MAX_RULE_TEXT_BYTES, MAX_RULES_PER_GROUP } from './model.ts';
export { ruleGroupToYaml, ruleNamespacesToYaml } from './to-yaml.ts';
export { ruleGroupFromJson, ruleGroupToJson, RULE_GROUP_JSON_VERSION, type RuleGroupJson } from './json.ts';
export { RULES_ERROR_CODE } from './problems.ts';

/** A whole rule file, `groups: [...]`; group names must be unique in it. An empty file has no groups. */
export function parseRuleFile(text: string, opts: RuleCheckOptions): RuleGroup[] {
  checkSize(text, 'rule file');
  return checkGroups(decodeRuleFile(text), opts, true);
}

/** One group, as the ruler API's POST body holds it (`name: …`, `rules: […]`). */
export function parseRuleGroup(text: string, opts: RuleCheckOptions): RuleGroup {
  checkSize(text, 'rule group');
  return checkGroups([decodeRuleGroup(text)], opts, false)[0]!;
}

/** Before any parsing, so an oversized body costs nothing more. */
function checkSize(text: string, what: string): void {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_RULE_TEXT_BYTES) throw rulesError([{ message: `${what} too large: more than ${MAX_RULE_TEXT_BYTES} bytes (${MAX_RULE_TEXT_BYTES / 1024 / 1024} MiB)` }]);
}
