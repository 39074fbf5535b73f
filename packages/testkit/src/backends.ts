import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

/** Real backing services for cluster-mode tests: a fresh PostgreSQL database, an S3 server, a Redis key prefix. */

export const PG_ADMIN_URL = process.env.FLOE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `floe_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = PG_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
  return {
    url,
    async drop() {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export const REDIS_URL = process.env.FLOE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix of its own on the machine's Redis; drop() deletes every key under it. */
export function createTestRedisPrefix(): { url: string; prefix: string; drop(): Promise<void> } {
  const prefix = `floe-test-${randomBytes(6).toString('hex')}:`;
  return {
    url: REDIS_URL,
    prefix,
    async drop() {
      const r = new Redis(REDIS_URL);
      try {
        let cursor = '0';
        do {
          const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          if (keys.length > 0) await r.del(...keys);
          cursor = next;
        } while (cursor !== '0');
      } finally {
        await r.quit();
      }
    },
  };
}

export interface TestS3 {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
}

const S3_CHILD = fileURLToPath(new URL('./s3rver-child.mjs', import.meta.url));

/**
 * A real S3-compatible server (s3rver) in a child process: s3rver's listing continuation tokens
 * use DES, which Node 24's OpenSSL only offers with --openssl-legacy-provider.
 */
export async function startTestS3(): Promise<TestS3> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-s3-'));
  const child = spawn(process.execPath, ['--openssl-legacy-provider', S3_CHILD, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`s3rver exited with code ${code} before listening`)));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const bucket = 'floe-test';
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  client.destroy();
  return {
    endpoint,
    bucket,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    async stop() {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.stdin!.end();
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
