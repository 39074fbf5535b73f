import { literalEnd } from './dotted.ts';

/**
 * Loki's `| distinct label, …` stage is one of the stages spec 1 (Log query rule 4) accepts and
 * passes rows through, but the stock `@grafana/lezer-logql` grammar has no production for it. As
 * with dotted names (dotted.ts), the text is rewritten before parsing, length-preserving: the
 * stage, from its `|` to the end of its label list, becomes spaces, so the parser sees the
 * pipeline without it and every position it reports is still one in the original text. A
 * `distinct` without labels is left alone (the parser then reports it, as Loki does).
 */
export function maskDistinctStages(src: string): string {
  let out = src;
  let i = 0;
  while (i < src.length) {
    const literal = literalEnd(src, i);
    if (literal !== undefined) {
      i = literal;
      continue;
    }
    if (src[i] !== '|') {
      i++;
      continue;
    }
    const word = /^\|\s*distinct\b/.exec(src.slice(i, i + 64));
    const labels = word ? /^(\s*[A-Za-z_][A-Za-z0-9_.:]*\s*)(,\s*[A-Za-z_][A-Za-z0-9_.:]*\s*)*/.exec(src.slice(i + word[0].length)) : null;
    if (!word || !labels || labels[0].trim() === '') {
      i++;
      continue;
    }
    const end = i + word[0].length + labels[0].length;
    out = out.slice(0, i) + out.slice(i, end).replace(/[^\n]/g, ' ') + out.slice(end);
    i = end;
  }
  return out;
}
