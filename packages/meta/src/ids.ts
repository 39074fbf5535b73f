// Identifier rules shared by the repositories and the schema's CHECK constraints (migration 1).
// Tenant and dataset ids become Iceberg namespace parts (`<tenant>.<dataset>`), object-store path
// segments and URL path segments, hence lowercase ASCII, no dots, at most 63 characters.

import { MetaError } from './errors.ts';

export const ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** The instance's own tenant (self-monitoring); the one id outside ID_PATTERN. */
export const SYSTEM_TENANT_ID = '_system';
export const DEFAULT_DATASET_ID = 'default';
/** The dataset of SYSTEM_TENANT_ID that Floe's own telemetry goes to (spec 1, Tenancy); also outside ID_PATTERN. */
export const MONITORING_DATASET_ID = '_monitoring';

export function isValidTenantId(id: unknown): id is string {
  return typeof id === 'string' && (ID_PATTERN.test(id) || id === SYSTEM_TENANT_ID);
}

export function isValidDatasetId(id: unknown): id is string {
  return typeof id === 'string' && (ID_PATTERN.test(id) || id === MONITORING_DATASET_ID);
}

export function assertTenantId(id: unknown): asserts id is string {
  if (!isValidTenantId(id)) {
    throw new MetaError(
      'bad_data',
      `invalid tenant id ${JSON.stringify(id)}: must match ${ID_PATTERN.source} or be ${SYSTEM_TENANT_ID}`,
    );
  }
}

export function assertDatasetId(id: unknown): asserts id is string {
  if (!isValidDatasetId(id)) {
    throw new MetaError('bad_data', `invalid dataset id ${JSON.stringify(id)}: must match ${ID_PATTERN.source}`);
  }
}

/** Free-text labels (display names, key names): bounded, no control characters. */
export function assertLabel(what: string, value: unknown, max = 200): asserts value is string {
  // eslint-disable-next-line no-control-regex
  if (typeof value !== 'string' || value.length > max || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new MetaError('bad_data', `invalid ${what}: a string of at most ${max} characters without control characters`);
  }
}
