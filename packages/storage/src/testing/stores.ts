// Test helper: the store backends every shared suite runs against. Not exported from the package.

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FsObjectStore } from '../fs-store.ts';
import type { ObjectStore } from '../object-store.ts';
import { S3ObjectStore } from '../s3-store.ts';
import type { S3ObjectStoreConfig } from '../object-store.ts';
import type { TestS3Server } from './s3-server.ts';

export interface OpenedStore {
  store: ObjectStore;
  cleanup(): Promise<void>;
}

export interface Backend {
  name: string;
  open(s3: TestS3Server): Promise<OpenedStore>;
}

export async function tempDir(label: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), `floe-${label}-`));
}

export function uniqueBucket(): string {
  return `floe-test-${randomBytes(6).toString('hex')}`;
}

export async function openS3(s3: TestS3Server, extra: Partial<S3ObjectStoreConfig> = {}): Promise<S3ObjectStore> {
  const bucket = uniqueBucket();
  await s3.createBucket(bucket);
  return new S3ObjectStore({
    kind: 's3',
    bucket,
    region: s3.region,
    endpoint: s3.endpoint,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    ...extra,
  });
}

export const backends: Backend[] = [
  {
    name: 'fs',
    async open() {
      const root = await tempDir('fs-store');
      const store = new FsObjectStore(path.join(root, 'data'));
      return { store, cleanup: async () => { await store.close(); await rm(root, { recursive: true, force: true }); } };
    },
  },
  {
    // Small pages so that listings paginate (ListObjectsV2 continuation tokens), under a prefix.
    name: 's3 (v2 listing, prefix, 2 keys per page)',
    async open(s3) {
      const store = await openS3(s3, { prefix: 'tenant-data/floe', listPageSize: 2 });
      return { store, cleanup: () => store.close() };
    },
  },
  {
    name: 's3 (v1 listing, no prefix, 3 keys per page)',
    async open(s3) {
      const store = await openS3(s3, { listApi: 'v1', listPageSize: 3 });
      return { store, cleanup: () => store.close() };
    },
  },
];
