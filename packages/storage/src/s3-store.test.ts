// Behaviour specific to the S3 store against a real s3rver; the common contract is in
// object-store.test.ts.

import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidKeyError } from './errors.ts';
import { objectStoreFromConfig } from './from-config.ts';
import { S3ObjectStore } from './s3-store.ts';
import { startS3Server } from './testing/s3-server.ts';
import type { TestS3Server } from './testing/s3-server.ts';
import { openS3, uniqueBucket } from './testing/stores.ts';

const enc = (s: string) => new TextEncoder().encode(s);

let s3: TestS3Server;
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3?.stop();
});

async function rawKeys(bucket: string): Promise<string[]> {
  const res = await s3.client().send(new ListObjectsV2Command({ Bucket: bucket }));
  return (res.Contents ?? []).map((o) => o.Key!);
}

describe('S3ObjectStore', () => {
  it('stores objects under the configured prefix and names them s3://bucket/prefix/key', async () => {
    const store = await openS3(s3, { prefix: '/floe/cluster-a/' });
    await store.put('wal/seg-1', enc('segment'));
    expect(store.prefix).toBe('floe/cluster-a/');
    expect(await rawKeys(store.bucket)).toEqual(['floe/cluster-a/wal/seg-1']);
    expect(store.uri('wal/seg-1')).toBe(`s3://${store.bucket}/floe/cluster-a/wal/seg-1`);
    expect(store.keyFromUri(`s3://${store.bucket}/floe/cluster-a/wal/seg-1`)).toBe('wal/seg-1');
    expect(() => store.keyFromUri(`s3://${store.bucket}/floe/other/wal/seg-1`)).toThrow(InvalidKeyError);
    expect(() => store.keyFromUri(`s3://other-bucket/floe/cluster-a/wal/seg-1`)).toThrow(InvalidKeyError);
    await store.close();
  });

  it('detects that s3rver ignores If-None-Match and falls back to HEAD-then-PUT, leaving no probe behind', async () => {
    const store = await openS3(s3, { prefix: 'p' });
    expect(await store.conditionalPutMode()).toBe('emulated');
    expect(await store.putIfAbsent('m', enc('first'))).toBe(true);
    expect(await store.putIfAbsent('m', enc('second'))).toBe(false);
    expect(new TextDecoder().decode(await store.get('m'))).toBe('first');
    expect(await rawKeys(store.bucket)).toEqual(['p/m']);
    await store.close();
  });

  it('honours an explicit emulate mode without probing', async () => {
    const store = await openS3(s3, { conditionalPut: 'emulate' });
    expect(await store.conditionalPutMode()).toBe('emulated');
    expect(await store.putIfAbsent('x', enc('1'))).toBe(true);
    expect(await store.putIfAbsent('x', enc('2'))).toBe(false);
    expect(await rawKeys(store.bucket)).toEqual(['x']);
    await store.close();
  });

  it('is built from the storage config section', async () => {
    const bucket = uniqueBucket();
    await s3.createBucket(bucket);
    const store = objectStoreFromConfig({
      storage: {
        kind: 's3',
        root: './unused',
        s3: {
          bucket,
          prefix: 'from-config',
          endpoint: s3.endpoint,
          region: s3.region,
          access_key_id: s3.accessKeyId,
          secret_access_key: s3.secretAccessKey,
          force_path_style: true,
        },
        cache_dir: './unused-cache',
        cache_max_bytes: 1024,
      },
    });
    expect(store).toBeInstanceOf(S3ObjectStore);
    await store.put('k', enc('v'));
    expect(await rawKeys(bucket)).toEqual(['from-config/k']);
    await store.close();
  });

  it('rejects an invalid page size', () => {
    expect(
      () => new S3ObjectStore({ kind: 's3', bucket: 'b', region: 'us-east-1', listPageSize: 0 }),
    ).toThrow('listPageSize');
  });
});
