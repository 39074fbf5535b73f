/**
 * The payload cap of every query tool (spec 1, profile query rule 6: search results obey "the
 * same payload cap and truncated flag as other query tools"). An agent reads a tool's answer into
 * a context window of limited size, so an answer whose JSON exceeds the cap is trimmed, list items
 * dropped from the end, until it fits, and says so with `truncated: true` (false otherwise) so the
 * agent knows to narrow the query rather than trust a partial list as complete.
 *
 * Which lists may be trimmed is declared per tool as paths (`['result', '*', 'values']`: the
 * values of every stream); other arrays, such as a sample's `[time, value]` pair, are never cut.
 * The paths are tried in the declared order: each gets the largest length (applied to every list
 * the path reaches) at which the whole answer fits; when even one item per list is too much, one
 * is kept and the next path trims inside it.
 */

/** 64 KiB of JSON: a few thousand log lines or series, a small part of an agent's context. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024;

/** Keys from the answer's root; `*` steps into every element of an array. */
export type ListPath = readonly string[];

export type Capped<T> = T & { truncated: boolean };

type Holder = { parent: Record<string, unknown>; key: string; full: unknown[] };

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), 'utf8');

/** The arrays a path reaches, with where each sits so it can be replaced by a prefix. */
function listsAt(root: unknown, path: ListPath): Holder[] {
  let nodes: unknown[] = [root];
  const last = path.length - 1;
  const out: Holder[] = [];
  path.forEach((step, i) => {
    const next: unknown[] = [];
    for (const node of nodes) {
      if (step === '*') {
        if (Array.isArray(node)) for (const x of node as unknown[]) next.push(x);
      } else if (node !== null && typeof node === 'object' && !Array.isArray(node)) {
        const value = (node as Record<string, unknown>)[step];
        if (i === last) {
          if (Array.isArray(value)) out.push({ parent: node as Record<string, unknown>, key: step, full: value });
        } else next.push(value);
      }
    }
    nodes = next;
  });
  return out;
}

/**
 * `doc` plus `truncated`, trimmed to at most `maxBytes` of JSON along `lists`. It takes ownership
 * of `doc` (trimming replaces its arrays). If emptying every declared list still leaves too much
 * (one enormous log line, say), the answer is returned that small and flagged, not refused.
 */
export function fitPayload<T extends object>(doc: T, lists: readonly ListPath[], maxBytes: number): Capped<T> {
  const out = { ...doc, truncated: false } as Capped<T>;
  if (bytes(out) <= maxBytes) return out;
  out.truncated = true;
  const fits = () => bytes(out) <= maxBytes;
  for (const path of lists) {
    const holders = listsAt(out, path);
    if (holders.length === 0) continue;
    const cut = (n: number) => {
      for (const h of holders) h.parent[h.key] = h.full.slice(0, n);
    };
    // The largest n at which every list of this path, cut to n items, lets the answer fit.
    let lo = 0;
    let hi = Math.max(...holders.map((h) => h.full.length));
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      cut(mid);
      if (fits()) lo = mid;
      else hi = mid - 1;
    }
    if (lo > 0) {
      cut(lo);
      return out;
    }
    cut(1);
  }
  // Even one item per list is too much: empty the lists, outermost first, until it fits.
  for (const path of lists) {
    for (const h of listsAt(out, path)) h.parent[h.key] = [];
    if (fits()) break;
  }
  return out;
}
