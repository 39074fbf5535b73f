// Test helper: a real s3rver on 127.0.0.1, an ephemeral port and a temp directory, plus bucket
// creation through the S3 API. Not exported from the package.

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

export interface TestS3Server {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Creates a bucket through the S3 API. */
  createBucket(name: string): Promise<void>;
  /** A raw SDK client against the server, for assertions that bypass the store. */
  client(): S3Client;
  stop(): Promise<void>;
}

const CHILD = fileURLToPath(new URL('./s3rver-child.mjs', import.meta.url));

export async function startS3Server(): Promise<TestS3Server> {
  const directory = await mkdtemp(path.join(tmpdir(), 'floe-s3rver-'));
  const child = spawn(process.execPath, ['--openssl-legacy-provider', CHILD, directory], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`s3rver exited with code ${code} before listening`)));
    child.once('error', reject);
  });
  const region = 'us-east-1'; // s3rver only accepts continuation tokens minted for us-east-1
  const endpoint = `http://127.0.0.1:${port}`;
  // s3rver's built-in account.
  const accessKeyId = 'S3RVER';
  const secretAccessKey = 'S3RVER';
  const clients: S3Client[] = [];
  const client = () => {
    const c = new S3Client({
      region,
      endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId, secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    clients.push(c);
    return c;
  };
  return {
    endpoint,
    region,
    accessKeyId,
    secretAccessKey,
    client,
    async createBucket(name) {
      await client().send(new CreateBucketCommand({ Bucket: name }));
    },
    async stop() {
      for (const c of clients) c.destroy();
      child.stdin!.end();
      await exited;
      await rm(directory, { recursive: true, force: true });
    },
  };
}
