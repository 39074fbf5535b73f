import { makePromLabels, mapEntries, type PromLabels } from '@floe/query';

/** A string map value (Arrow MapRow, Map or object) as a label set: its non-empty string entries. */
export function mapLabels(v: unknown): PromLabels {
  return makePromLabels(mapEntries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
