import { FsObjectStore } from './fs-store.ts';
import type { ObjectStore, ObjectStoreConfig } from './object-store.ts';
import { S3ObjectStore } from './s3-store.ts';

/** The store for a config: a local directory (embedded mode) or an S3 bucket (cluster mode). */
export function createObjectStore(cfg: ObjectStoreConfig): ObjectStore {
  switch (cfg.kind) {
    case 'fs':
      return new FsObjectStore(cfg.root);
    case 's3':
      return new S3ObjectStore(cfg);
    default: {
      const kind: never = cfg;
      throw new Error(`unknown object store kind ${JSON.stringify((kind as { kind: unknown }).kind)}`);
    }
  }
}
