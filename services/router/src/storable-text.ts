/**
 * Text the metadata DB (PostgreSQL, PGlite too) cannot keep as sent: U+0000, refused in text and
 * jsonb alike, and a lone UTF-16 surrogate, which text turns into U+FFFD and jsonb refuses. The
 * management API refuses such text (management/storable-text.ts); the ruler replaces it in the
 * state it saves (ruler/storable.ts).
 */

/** In u mode a valid surrogate pair is one code point, so only lone surrogates match. */
const UNSTORABLE = /\u0000|\p{Surrogate}/u;
const UNSTORABLE_ALL = /\u0000|\p{Surrogate}/gu;

/** Why `s` cannot be stored as it is, or undefined. */
export function whyUnstorable(s: string): string | undefined {
  if (!UNSTORABLE.test(s)) return undefined;
  return s.includes('\u0000') ? 'contains a NUL character (U+0000)' : 'contains a lone UTF-16 surrogate (not valid Unicode)';
}

/** `s` with each character the DB cannot keep replaced by U+FFFD. */
export function storableText(s: string): string {
  return s.replace(UNSTORABLE_ALL, '\ufffd');
}
