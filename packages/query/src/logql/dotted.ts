/**
 * Dotted label names (`{k8s.pod.name="x"}`, `| http.status_code >= 400`) are required by the spec
 * (spec 1, "Log label resolution" rule 4), but the stock `@grafana/lezer-logql` grammar's Identifier
 * token stops at a dot. DESIGN.md ("Query surfaces") allows rewriting them to a reserved form before
 * parsing and back after, which keeps the official grammar the parser of record.
 *
 * The rewrite here is length-preserving: each dot inside a dotted name becomes `_` (or `:` where
 * `_` would spell one of the grammar's keywords), so every node position the parser reports is a
 * position in the original text, and names are read back from the original text by position. No
 * table of rewritten names is needed and a genuine `a_b` can never be confused with `a.b`.
 *
 * This is not a tokenizer for LogQL: it only skips string literals and comments (where a dot is
 * data) and numbers (`1.5`), and masks dots between identifier characters everywhere else.
 */

// Words the grammar specializes or extends from Identifier: a masked name must not become one.
const KEYWORDS = new Set([
  'json', 'logfmt', 'unpack', 'pattern', 'regexp', 'unwrap', 'ip', 'label_format', 'line_format', 'label_replace',
  'offset', 'bool', 'on', 'ignoring', 'group_left', 'group_right', 'decolorize', 'drop', 'keep', 'by', 'without',
  'and', 'or', 'unless', 'sum', 'avg', 'count', 'max', 'min', 'stddev', 'stdvar', 'bottomk', 'topk', 'sort',
  'sort_desc', 'approx_topk', 'vector', 'count_over_time', 'rate', 'rate_counter', 'bytes_over_time', 'bytes_rate',
  'avg_over_time', 'sum_over_time', 'min_over_time', 'max_over_time', 'stddev_over_time', 'stdvar_over_time',
  'quantile_over_time', 'first_over_time', 'last_over_time', 'absent_over_time', 'bytes', 'duration',
  'duration_seconds', 'approx_count_distinct',
]);

const isIdentStart = (c: string) => /[A-Za-z_:]/.test(c);
const isIdentPart = (c: string) => /[A-Za-z0-9_:]/.test(c);

/**
 * Where the string literal or comment starting at src[i] ends (exclusive), or undefined when none
 * starts there: the parts of a query where LogQL's punctuation and names are data.
 */
export function literalEnd(src: string, i: number): number | undefined {
  const c = src[i]!;
  if (c === '"' || c === "'") {
    // Same shape as the grammar's String token: backslash escapes, ends at the quote or a newline.
    let j = i + 1;
    while (j < src.length && src[j] !== c && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1;
    return Math.min(src.length, j + 1);
  }
  if (c === '`') {
    const end = src.indexOf('`', i + 1);
    return end < 0 ? src.length : end + 1;
  }
  if (c === '#') {
    const end = src.indexOf('\n', i);
    return end < 0 ? src.length : end;
  }
  return undefined;
}

export function maskDottedNames(src: string): string {
  let out = '';
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    const literal = literalEnd(src, i);
    if (literal !== undefined) {
      out += src.slice(i, literal);
      i = literal;
    } else if (/[0-9]/.test(c)) {
      // A number, duration or byte size (1.5, 10ms, 0x1f, 5KB): its dots are not name dots.
      let j = i + 1;
      while (j < src.length && /[0-9A-Za-z_.]/.test(src[j]!)) j++;
      out += src.slice(i, j);
      i = j;
    } else if (isIdentStart(c)) {
      let j = i + 1;
      while (j < src.length && (isIdentPart(src[j]!) || (src[j] === '.' && j + 1 < src.length && isIdentPart(src[j + 1]!)))) j++;
      const name = src.slice(i, j);
      if (name.includes('.')) {
        const masked = name.replaceAll('.', '_');
        out += KEYWORDS.has(masked) ? name.replaceAll('.', ':') : masked;
      } else {
        out += name;
      }
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}
