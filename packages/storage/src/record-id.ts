// Time-sortable unique ids in the style of ULID: 26 Crockford base-32 characters, 10 for the
// millisecond timestamp and 16 (80 bits) of randomness. Within one process ids are strictly
// increasing: a second id in the same millisecond (or after the clock stepped back) increments the
// previous random part instead of drawing a new one.

import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10;
const RANDOM_CHARS = 16;

let lastTime = -1;
let lastRandom: number[] = [];

// Random bytes are drawn a page at a time: one draw per id cost a measurable share of the
// acceptor's main thread (an id per WAL record). The ids need uniqueness, not secrecy.
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;

function randomDigits(): number[] {
  if (poolAt + RANDOM_CHARS > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  const digits = new Array<number>(RANDOM_CHARS);
  for (let i = 0; i < RANDOM_CHARS; i++) digits[i] = pool[poolAt + i]! & 31;
  poolAt += RANDOM_CHARS;
  return digits;
}

/** Adds one to a base-32 digit array; false on overflow. */
function increment(digits: number[]): boolean {
  for (let i = digits.length - 1; i >= 0; i--) {
    if (digits[i]! < 31) {
      digits[i]!++;
      return true;
    }
    digits[i] = 0;
  }
  return false;
}

export function newRecordId(now: number = Date.now()): string {
  let time = Math.max(now, lastTime);
  if (time === lastTime) {
    if (!increment(lastRandom)) {
      time++; // 2^80 ids in one millisecond: borrow the next one
      lastRandom = randomDigits();
    }
  } else {
    lastRandom = randomDigits();
  }
  lastTime = time;
  let out = '';
  for (let i = TIME_CHARS - 1, t = time; i >= 0; i--) {
    out = ALPHABET[t % 32]! + out;
    t = Math.floor(t / 32);
  }
  for (const d of lastRandom) out += ALPHABET[d]!;
  return out;
}

/** Milliseconds since the epoch encoded in an id from newRecordId. */
export function recordIdTime(id: string): number {
  let t = 0;
  for (const ch of id.slice(0, TIME_CHARS)) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) throw new TypeError(`not a record id: ${id}`);
    t = t * 32 + v;
  }
  return t;
}
