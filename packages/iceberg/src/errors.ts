// Errors raised by the catalog. Each has a stable `code` so callers can map it without importing
// classes (instanceof across package copies is unreliable).

export class IcebergError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IcebergError';
    this.code = code;
  }
}

/** The table is not in the catalog (or was dropped while committing). */
export class TableNotFoundError extends IcebergError {
  constructor(namespace: string, name: string) {
    super('table_not_found', `iceberg table ${namespace}.${name} does not exist`);
    this.name = 'TableNotFoundError';
  }
}

/**
 * A commit could not be applied: either a validation failed against the latest metadata (a file
 * to remove is no longer live) or the compare-and-swap kept losing after every retry.
 */
export class CommitConflictError extends IcebergError {
  readonly retryable: boolean;
  constructor(message: string, retryable: boolean) {
    super('commit_conflict', message);
    this.name = 'CommitConflictError';
    this.retryable = retryable;
  }
}

/** Metadata or a manifest is missing or malformed. */
export class InvalidMetadataError extends IcebergError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('invalid_metadata', message, options);
    this.name = 'InvalidMetadataError';
  }
}
