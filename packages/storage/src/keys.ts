// Object keys are '/'-separated relative paths that mean the same thing on every store. The rules
// are strict so that a key can never escape an fs root and so that fs and S3 agree on which keys
// exist: no empty, '.' or '..' segments (S3 would keep 'a//b' distinct from 'a/b', a file system
// would not), no leading '/', no backslash, no NUL, at most 1024 UTF-8 bytes (the S3 limit).
// Segments starting with '.floe-' at the top level are reserved for the stores' own bookkeeping
// (fs temp files, the S3 conditional-write probe).

import { InvalidKeyError } from './errors.ts';

export const RESERVED_TOP_LEVEL_PREFIX = '.floe-';
const MAX_KEY_BYTES = 1024;

function checkCharacters(key: string): void {
  if (key.includes('\0')) throw new InvalidKeyError(key, 'contains NUL');
  if (key.includes('\\')) throw new InvalidKeyError(key, 'contains a backslash');
  if (key.startsWith('/')) throw new InvalidKeyError(key, 'is absolute');
  if (/^[A-Za-z]:/.test(key)) throw new InvalidKeyError(key, 'looks like a drive path');
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
    throw new InvalidKeyError(key, `longer than ${MAX_KEY_BYTES} bytes`);
  }
}

/** Throws InvalidKeyError unless `key` is a valid object key; returns it otherwise. */
export function validateKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidKeyError(String(key), 'is empty');
  checkCharacters(key);
  const segments = key.split('/');
  for (const segment of segments) {
    if (segment === '') throw new InvalidKeyError(key, 'has an empty segment');
    if (segment === '.' || segment === '..') throw new InvalidKeyError(key, `has a '${segment}' segment`);
  }
  if (segments[0]!.startsWith(RESERVED_TOP_LEVEL_PREFIX)) {
    throw new InvalidKeyError(key, `top-level names starting with '${RESERVED_TOP_LEVEL_PREFIX}' are reserved`);
  }
  return key;
}

/**
 * A list prefix is a plain string prefix (as in S3, 'a/b' matches 'a/b/c' and 'a/bc'), so it may
 * end in '/' or mid-segment; '' lists everything. It obeys the same character rules as a key.
 */
export function validatePrefix(prefix: string): string {
  if (typeof prefix !== 'string') throw new InvalidKeyError(String(prefix), 'prefix is not a string');
  if (prefix === '') return prefix;
  checkCharacters(prefix);
  const segments = prefix.split('/');
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '' && !last) throw new InvalidKeyError(prefix, 'has an empty segment');
    if (segment === '.' || segment === '..') throw new InvalidKeyError(prefix, `has a '${segment}' segment`);
  });
  return prefix;
}

/** True for keys inside the stores' reserved top-level names (never returned by list()). */
export function isReservedKey(key: string): boolean {
  return key.startsWith(RESERVED_TOP_LEVEL_PREFIX);
}

/** Orders keys by their UTF-8 bytes, which is the order S3 lists them in. */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
