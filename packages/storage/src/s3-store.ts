// Object store on an S3-compatible bucket (cluster mode), using AWS SDK v3. Object <key> lives at
// <prefix><key> in the bucket. A successful PUT is durable on S3, so put() resolves only after the
// server acknowledged it.
//
// Two compatibility notes:
// - Checksums are computed only when an operation requires them (DeleteObjects). The SDK's default
//   since 2025 adds CRC trailers with aws-chunked encoding to streaming uploads, which many
//   S3-compatible servers store verbatim or reject.
// - putIfAbsent uses `If-None-Match: *`. Servers that ignore the header (s3rver, older MinIO and
//   Ceph) would silently overwrite, so 'auto' mode probes once: it writes a probe object twice, the
//   second time conditionally, and only trusts the header if the server answers 412. Otherwise it
//   falls back to HEAD-then-PUT, which is correct for a single writer per key but racy between
//   writers.

import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { InvalidKeyError, ObjectNotFoundError } from './errors.ts';
import { compareKeys, isReservedKey, validateKey, validatePrefix } from './keys.ts';
import { checkRange, joinBody } from './object-store.ts';
import type { ObjectBody, ObjectInfo, ObjectStore, S3ObjectStoreConfig } from './object-store.ts';

const DELETE_BATCH = 1000; // DeleteObjects limit
const MAX_SINGLE_PUT_BYTES = 5 * 1024 ** 3; // PutObject limit
const PROBE_PREFIX = '.floe-probe/';

interface S3ErrorShape {
  name?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

function s3Status(err: unknown): number | undefined {
  return (err as S3ErrorShape | null)?.$metadata?.httpStatusCode;
}

function s3Name(err: unknown): string | undefined {
  const e = err as S3ErrorShape | null;
  return e?.Code ?? e?.name;
}

function isNotFound(err: unknown): boolean {
  const name = s3Name(err);
  return name === 'NoSuchKey' || name === 'NotFound' || s3Status(err) === 404;
}

function isPreconditionFailed(err: unknown): boolean {
  return s3Status(err) === 412 || s3Name(err) === 'PreconditionFailed';
}

function normalizePrefix(prefix: string | undefined): string {
  if (prefix === undefined || prefix === '' || prefix === '/') return '';
  const trimmed = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  validateKey(trimmed);
  return `${trimmed}/`;
}

export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3' as const;
  readonly bucket: string;
  /** '' or a prefix ending in '/'. */
  readonly prefix: string;
  readonly #client: S3Client;
  readonly #conditionalPut: 'auto' | 'native' | 'emulate';
  readonly #listApi: 'v2' | 'v1';
  readonly #pageSize: number;
  #nativeConditional: Promise<boolean> | undefined;

  constructor(cfg: S3ObjectStoreConfig) {
    if (!cfg.bucket) throw new Error('s3 object store: bucket is required');
    this.bucket = cfg.bucket;
    this.prefix = normalizePrefix(cfg.prefix);
    this.#conditionalPut = cfg.conditionalPut ?? 'auto';
    this.#listApi = cfg.listApi ?? 'v2';
    this.#pageSize = cfg.listPageSize ?? 1000;
    if (!Number.isInteger(this.#pageSize) || this.#pageSize < 1 || this.#pageSize > 1000) {
      throw new RangeError(`s3 object store: listPageSize must be 1..1000, got ${cfg.listPageSize}`);
    }
    const clientConfig: S3ClientConfig = {
      region: cfg.region,
      forcePathStyle: cfg.forcePathStyle ?? cfg.endpoint !== undefined,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    };
    if (cfg.endpoint !== undefined) clientConfig.endpoint = cfg.endpoint;
    if (cfg.accessKeyId !== undefined && cfg.secretAccessKey !== undefined) {
      clientConfig.credentials = { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey };
    }
    this.#client = new S3Client(clientConfig);
  }

  localPath(key: string): undefined {
    validateKey(key);
    return undefined;
  }

  uri(key: string): string {
    return `s3://${this.bucket}/${this.#fullKey(key)}`;
  }

  keyFromUri(uri: string): string {
    const base = `s3://${this.bucket}/${this.prefix}`;
    if (!uri.startsWith(base)) throw new InvalidKeyError(uri, `not under ${base}`);
    return validateKey(uri.slice(base.length));
  }

  async put(key: string, parts: ObjectBody): Promise<void> {
    const body = joinBody(parts);
    await this.#client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: this.#fullKey(key), Body: body, ContentLength: body.byteLength }),
    );
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const fullKey = this.#fullKey(key);
    if (await this.#usesNativeConditionalPut()) return this.#conditionalPutObject(fullKey, body);
    if ((await this.head(key)) !== undefined) return false;
    await this.put(key, body);
    return true;
  }

  /** Which putIfAbsent strategy this store uses against its server (probes once in 'auto'). */
  async conditionalPutMode(): Promise<'native' | 'emulated'> {
    return (await this.#usesNativeConditionalPut()) ? 'native' : 'emulated';
  }

  async get(key: string, alloc?: (bytes: number) => Uint8Array): Promise<Uint8Array | undefined> {
    try {
      const res = await this.#client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.#fullKey(key) }));
      const bytes = res.Body ? await res.Body.transformToByteArray() : new Uint8Array(0);
      if (!alloc) return bytes;
      const out = alloc(bytes.length);
      out.set(bytes);
      return out;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array> {
    checkRange(offset, length);
    const fullKey = this.#fullKey(key);
    if (length === 0) {
      if ((await this.head(key)) === undefined) throw new ObjectNotFoundError(key);
      return new Uint8Array(0);
    }
    try {
      const res = await this.#client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: fullKey, Range: `bytes=${offset}-${offset + length - 1}` }),
      );
      const bytes = res.Body ? await res.Body.transformToByteArray() : new Uint8Array(0);
      // A server that ignores Range answers 200 with the whole object.
      if (res.ContentRange === undefined && bytes.byteLength > length) {
        return bytes.subarray(Math.min(offset, bytes.byteLength), Math.min(offset + length, bytes.byteLength));
      }
      return bytes;
    } catch (err) {
      if (isNotFound(err)) throw new ObjectNotFoundError(key);
      // 416: the range starts at or past the end of an existing object.
      if (s3Status(err) === 416 || s3Name(err) === 'InvalidRange') return new Uint8Array(0);
      throw err;
    }
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    try {
      const res = await this.#client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.#fullKey(key) }));
      const info: ObjectInfo = { key, size: res.ContentLength ?? 0 };
      if (res.LastModified) info.lastModified = res.LastModified;
      return info;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    validatePrefix(prefix);
    const fullPrefix = this.prefix + prefix;
    const out: ObjectInfo[] = [];
    const collect = (contents: Array<{ Key?: string; Size?: number; LastModified?: Date }> | undefined) => {
      for (const obj of contents ?? []) {
        if (obj.Key === undefined || !obj.Key.startsWith(fullPrefix)) continue;
        const key = obj.Key.slice(this.prefix.length);
        if (isReservedKey(key)) continue;
        const info: ObjectInfo = { key, size: obj.Size ?? 0 };
        if (obj.LastModified) info.lastModified = obj.LastModified;
        out.push(info);
      }
    };
    if (this.#listApi === 'v2') {
      let token: string | undefined;
      do {
        const res = await this.#client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: fullPrefix,
            MaxKeys: this.#pageSize,
            ContinuationToken: token,
          }),
        );
        collect(res.Contents);
        token = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (token !== undefined);
    } else {
      let marker: string | undefined;
      for (;;) {
        const res = await this.#client.send(
          new ListObjectsCommand({ Bucket: this.bucket, Prefix: fullPrefix, MaxKeys: this.#pageSize, Marker: marker }),
        );
        collect(res.Contents);
        const last = res.Contents?.at(-1)?.Key;
        if (!res.IsTruncated || last === undefined) break;
        marker = res.NextMarker ?? last;
      }
    }
    return out.sort((a, b) => compareKeys(a.key, b.key));
  }

  async listPrefixes(prefix: string): Promise<string[]> {
    validatePrefix(prefix);
    const fullPrefix = this.prefix + prefix;
    const out: string[] = [];
    const collect = (prefixes: Array<{ Prefix?: string }> | undefined) => {
      for (const p of prefixes ?? []) {
        if (p.Prefix === undefined || !p.Prefix.startsWith(fullPrefix)) continue;
        const key = p.Prefix.slice(this.prefix.length);
        if (!isReservedKey(key)) out.push(key);
      }
    };
    if (this.#listApi === 'v2') {
      let token: string | undefined;
      do {
        const res = await this.#client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: fullPrefix, Delimiter: '/', MaxKeys: this.#pageSize, ContinuationToken: token }));
        collect(res.CommonPrefixes);
        token = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (token !== undefined);
    } else {
      let marker: string | undefined;
      for (;;) {
        const res = await this.#client.send(new ListObjectsCommand({ Bucket: this.bucket, Prefix: fullPrefix, Delimiter: '/', MaxKeys: this.#pageSize, Marker: marker }));
        collect(res.CommonPrefixes);
        // With a delimiter the page's last key may be a prefix; S3 then answers NextMarker.
        const last = [res.Contents?.at(-1)?.Key, res.CommonPrefixes?.at(-1)?.Prefix].filter((k): k is string => k !== undefined).sort(compareKeys).at(-1);
        const next = res.NextMarker ?? last;
        if (!res.IsTruncated || next === undefined) break;
        marker = next;
      }
    }
    return [...new Set(out)].sort(compareKeys);
  }

  async delete(key: string): Promise<void> {
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.#fullKey(key) }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async deleteMany(keys: string[]): Promise<void> {
    const fullKeys = keys.map((key) => this.#fullKey(key));
    for (let i = 0; i < fullKeys.length; i += DELETE_BATCH) {
      const batch = fullKeys.slice(i, i + DELETE_BATCH);
      const res = await this.#client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const errors = (res.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (errors.length > 0) {
        const detail = errors.slice(0, 3).map((e) => `${e.Key}: ${e.Code} ${e.Message ?? ''}`.trim());
        throw new Error(`s3 deleteMany: ${errors.length} key(s) not deleted (${detail.join('; ')})`);
      }
    }
  }

  async putFile(key: string, localFile: string): Promise<void> {
    const fullKey = this.#fullKey(key);
    const { size } = await stat(localFile);
    if (size > MAX_SINGLE_PUT_BYTES) {
      throw new RangeError(`s3 putFile: ${localFile} is ${size} bytes, above the 5 GiB single PUT limit`);
    }
    await this.#client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: fullKey, Body: createReadStream(localFile), ContentLength: size }),
    );
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }

  #fullKey(key: string): string {
    return this.prefix + validateKey(key);
  }

  async #conditionalPutObject(fullKey: string, body: Uint8Array): Promise<boolean> {
    try {
      await this.#client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: fullKey,
          Body: body,
          ContentLength: body.byteLength,
          IfNoneMatch: '*',
        }),
      );
      return true;
    } catch (err) {
      if (isPreconditionFailed(err)) return false;
      throw err;
    }
  }

  #usesNativeConditionalPut(): Promise<boolean> {
    if (this.#conditionalPut !== 'auto') return Promise.resolve(this.#conditionalPut === 'native');
    this.#nativeConditional ??= this.#probeConditionalPut().catch((err: unknown) => {
      this.#nativeConditional = undefined; // transient failure: probe again next time
      throw err;
    });
    return this.#nativeConditional;
  }

  async #probeConditionalPut(): Promise<boolean> {
    const probeKey = `${this.prefix}${PROBE_PREFIX}${randomUUID()}`;
    const empty = new Uint8Array(0);
    await this.#client.send(new PutObjectCommand({ Bucket: this.bucket, Key: probeKey, Body: empty, ContentLength: 0 }));
    try {
      // The object exists, so a server that honours If-None-Match must refuse this write.
      return !(await this.#conditionalPutObject(probeKey, empty));
    } catch (err) {
      const status = s3Status(err);
      if (status === 501 || s3Name(err) === 'NotImplemented') return false;
      throw err;
    } finally {
      await this.#client
        .send(new DeleteObjectCommand({ Bucket: this.bucket, Key: probeKey }))
        .catch(() => {});
    }
  }
}
