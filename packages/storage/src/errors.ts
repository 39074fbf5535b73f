// Errors raised by @floe/storage. Each carries a stable `code` (FLOE_ERR_STORAGE_*) so the errors
// package can map them to the wire; messages name the key or segment involved and never include
// object contents.

export class InvalidKeyError extends Error {
  readonly code = 'FLOE_ERR_STORAGE_INVALID_KEY';
  readonly key: string;
  constructor(key: string, reason: string) {
    super(`invalid object key ${JSON.stringify(key)}: ${reason}`);
    this.name = 'InvalidKeyError';
    this.key = key;
  }
}

export class ObjectNotFoundError extends Error {
  readonly code = 'FLOE_ERR_STORAGE_NOT_FOUND';
  readonly key: string;
  constructor(key: string) {
    super(`object not found: ${key}`);
    this.name = 'ObjectNotFoundError';
    this.key = key;
  }
}

/** An object that read back shorter (or longer) than its listed or recorded size: truncated, or overwritten meanwhile. */
export class ObjectSizeMismatchError extends Error {
  readonly code = 'FLOE_ERR_STORAGE_SIZE_MISMATCH';
  readonly key: string;
  readonly size: number;
  readonly expected: number;
  constructor(key: string, size: number, expected: number) {
    super(`object ${key} has ${size} bytes, expected ${expected}`);
    this.name = 'ObjectSizeMismatchError';
    this.key = key;
    this.size = size;
    this.expected = expected;
  }
}

/** A WAL segment whose bytes do not match the documented framing (see wal-format.ts). */
export class WalCorruptionError extends Error {
  readonly code = 'FLOE_ERR_STORAGE_WAL_CORRUPT';
  readonly segment: string;
  readonly offset: number;
  readonly reason: string;
  constructor(segment: string, offset: number, reason: string) {
    super(`corrupt WAL segment ${segment} at byte ${offset}: ${reason}`);
    this.name = 'WalCorruptionError';
    this.segment = segment;
    this.offset = offset;
    this.reason = reason;
  }
}

/** The segment holding these records could not be made durable; nothing was acknowledged. */
export class WalAppendError extends Error {
  readonly code = 'FLOE_ERR_STORAGE_WAL_UNAVAILABLE';
  readonly segment: string;
  constructor(segment: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(`WAL segment ${segment} could not be written: ${detail}`, { cause });
    this.name = 'WalAppendError';
    this.segment = segment;
  }
}

export class WalClosedError extends Error {
  readonly code = 'FLOE_ERR_STORAGE_WAL_CLOSED';
  constructor() {
    super('WAL appender is closed');
    this.name = 'WalClosedError';
  }
}

/** errno-style code of a Node/system error, if any. */
export function errorCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
