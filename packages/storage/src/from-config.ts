// Builds the store and cache from the validated `storage` config section (packages/config).

import type { FloeConfig } from '@floe/config';
import { createObjectStore } from './create-object-store.ts';
import { LocalFileCache } from './file-cache.ts';
import type { ObjectStore, S3ObjectStoreConfig } from './object-store.ts';

type StorageSection = FloeConfig['storage'];

/** The object store the `storage` section describes (empty strings mean "not set"). */
export function objectStoreFromConfig(config: { storage: StorageSection }): ObjectStore {
  const s = config.storage;
  if (s.kind === 'fs') return createObjectStore({ kind: 'fs', root: s.root });
  const cfg: S3ObjectStoreConfig = {
    kind: 's3',
    bucket: s.s3.bucket,
    region: s.s3.region,
    forcePathStyle: s.s3.force_path_style,
  };
  if (s.s3.prefix !== '') cfg.prefix = s.s3.prefix;
  if (s.s3.endpoint !== '') cfg.endpoint = s.s3.endpoint;
  if (s.s3.access_key_id !== '' && s.s3.secret_access_key !== '') {
    cfg.accessKeyId = s.s3.access_key_id;
    cfg.secretAccessKey = s.s3.secret_access_key;
  }
  return createObjectStore(cfg);
}

/** The local file cache for query readers, from storage.cache_dir and storage.cache_max_bytes. */
export function fileCacheFromConfig(config: { storage: StorageSection }): LocalFileCache {
  return new LocalFileCache({ dir: config.storage.cache_dir, maxBytes: config.storage.cache_max_bytes });
}
