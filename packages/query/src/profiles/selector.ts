import { FloeError, isFloeError } from '@floe/errors';
import type { LabelMatch } from '../ir/logs.ts';
import { parsePromQL } from '../promql/parse.ts';
import { PROFILE_SELECTOR_ERROR, parseProfileTypeRef, type ProfileTypeRef } from './profile-type.ts';

/**
 * Profile selectors (spec 1, "Profile type selector"): `<profile_type>{label="value", ...}`, the
 * series-selector syntax Pyroscope reads with Prometheus's own parser. Floe parses the braces with
 * the same grammar (`@prometheus-io/lezer-promql` through promql/parse.ts), so `=`, `!=`, `=~`,
 * `!~`, escapes, RE2 checks and quoted label names (`{"thread.name"="main"}`, the way Prometheus 3
 * spells a dotted name) behave exactly as in PromQL.
 *
 * The profile type in front is not handed to the grammar: a stored type's parts come from the
 * sender's sample and period type strings, which need not be PromQL identifiers (a `.` or `-` in
 * a unit). It is cut off at the first `{` or space and replaced by an identifier of the same
 * length before parsing, so every position in an error is a position in the text the user sent.
 * A type may also be given as a `__name__` matcher holding a colon-separated id.
 */
export interface ProfileSelector {
  profileType: ProfileTypeRef | undefined;
  /** Every matcher must hold; `__name__` (type name) and `__profile_type__` (full id) included. */
  matchers: LabelMatch[];
}

const MAX_SELECTOR_LENGTH = 16 * 1024;
// Up to the braces, a space or an operator: type parts are free text but never PromQL syntax.
const TYPE_HEAD = /^[^\s{}()[\]"'`,=!~+*/<>^%@]+/;

const bad = (message: string) => new FloeError('bad_data', message, { code: PROFILE_SELECTOR_ERROR });

export function parseProfileSelector(text: string): ProfileSelector {
  if (text.length > MAX_SELECTOR_LENGTH) throw bad(`profile selector longer than ${MAX_SELECTOR_LENGTH} characters`);
  const lead = text.length - text.trimStart().length;
  const head = TYPE_HEAD.exec(text.slice(lead))?.[0] ?? '';
  let profileType = head === '' ? undefined : parseProfileTypeRef(head);
  const rest = text.slice(lead + head.length);
  if (rest.trim() === '' || /^\s*\{\s*\}\s*$/.test(rest)) {
    if (profileType === undefined) throw bad('empty profile selector: expected <profile_type>{label="value", ...}');
    return { profileType, matchers: [] };
  }

  const masked = text.slice(0, lead) + '_'.repeat(head.length) + rest;
  let expr;
  try {
    expr = parsePromQL(masked);
  } catch (err) {
    if (isFloeError(err) && err.kind === 'bad_data') throw new FloeError('bad_data', err.message, { code: PROFILE_SELECTOR_ERROR, position: err.position });
    throw err;
  }
  if (expr.type !== 'selector' || expr.offsetMs !== 0 || expr.at !== undefined) {
    throw bad('a profile selector is a profile type and label matchers only, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="api"}');
  }
  const matchers: LabelMatch[] = [];
  // The first __name__ matcher is the masked type itself when one was written in front.
  const own = head === '' ? [...expr.matchers] : expr.matchers.slice(1);
  for (const m of own) {
    if (m.name === '__name__' && m.op === '=' && m.value.includes(':')) {
      if (profileType !== undefined) throw bad('the profile type must not be set twice');
      profileType = parseProfileTypeRef(m.value);
      continue;
    }
    matchers.push({ label: m.name, op: m.op, value: m.value });
  }
  return { profileType, matchers };
}

/** A selector that must name its profile type (render, render-diff). */
export function parseTypedProfileSelector(text: string): ProfileSelector & { profileType: ProfileTypeRef } {
  const sel = parseProfileSelector(text);
  if (sel.profileType === undefined) throw bad('the profile selector names no profile type: expected <profile_type>{label="value", ...}');
  return { profileType: sel.profileType, matchers: sel.matchers };
}

/**
 * A selector whose profile type is optional and which may select everything: '' or `{}` (what
 * Grafana sends as Connect matchers and label_selector before anything is picked).
 */
export function parseOptionalProfileSelector(text: string): ProfileSelector {
  if (/^\s*(\{\s*\})?\s*$/.test(text)) return { profileType: undefined, matchers: [] };
  return parseProfileSelector(text);
}
