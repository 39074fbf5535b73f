// label_replace's replacement template, shared by LogQL and PromQL (both follow Prometheus).

/**
 * Go's Regexp.Expand: `$name` / `${name}` name a group by number or name (the longest run of
 * letters, digits and underscores); an unknown or unmatched group is empty; `$$` is a dollar; a
 * `$` not followed by a name is kept as is.
 */
export function expandTemplate(template: string, m: RegExpExecArray): string {
  let out = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i]!;
    if (c !== '$') {
      out += c;
      continue;
    }
    if (template[i + 1] === '$') {
      out += '$';
      i++;
      continue;
    }
    let name: string | undefined;
    let end = i + 1;
    if (template[i + 1] === '{') {
      const close = template.indexOf('}', i + 2);
      const inner = close < 0 ? '' : template.slice(i + 2, close);
      if (/^[A-Za-z0-9_]+$/.test(inner)) {
        name = inner;
        end = close + 1;
      }
    } else {
      const run = /^[A-Za-z0-9_]+/.exec(template.slice(i + 1));
      if (run) {
        name = run[0];
        end = i + 1 + run[0].length;
      }
    }
    if (name === undefined) {
      out += '$';
      continue;
    }
    if (/^\d+$/.test(name)) out += m[Number(name)] ?? '';
    else out += m.groups?.[name] ?? '';
    i = end - 1;
  }
  return out;
}
