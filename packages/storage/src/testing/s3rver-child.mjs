// Runs s3rver for tests in its own Node process, started by src/testing/s3-server.ts.
//
// Why a child process: s3rver 3.7.1 encrypts ListObjectsV2 continuation tokens with DES, which
// OpenSSL 3 (Node >= 17) only provides with --openssl-legacy-provider. Without it every truncated
// V2 listing fails with a 500, so pagination could not be tested in the vitest worker itself.
//
// argv: <directory>. Prints one JSON line {"port": n} once listening; exits when stdin closes.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import S3rver from 's3rver';
import FilesystemStore from 's3rver/lib/stores/filesystem.js';

// s3rver 3.7.1 answers a PUT once the body has been read, not once its file is written: a GET
// right after could read an empty or partial object (seen under load: a test read '' after
// writing 'x'). Real S3 is read-after-write consistent, and Floe relies on it, so the object's
// bytes are on disk before the PUT is answered.
FilesystemStore.prototype.putObject = async function putObject(object) {
  const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
  await mkdir(dirname(objectPath), { recursive: true });
  const md5 = createHash('md5');
  let size = 0;
  const counting = new Transform({
    transform(chunk, encoding, callback) {
      md5.update(chunk, encoding);
      size += chunk.length;
      callback(null, chunk);
    },
  });
  const content = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
  await pipeline(content, counting, createWriteStream(objectPath));
  const digest = md5.digest('hex');
  await this.putMetadata(object.bucket, object.key, object.metadata, digest);
  return { size, md5: digest };
};

const directory = process.argv[2];
if (!directory) throw new Error('usage: s3rver-child.mjs <directory>');
const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true });
const address = await server.run();
process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);

const stop = () => {
  server.close().finally(() => process.exit(0));
};
process.stdin.on('end', stop);
process.stdin.resume();
process.on('SIGTERM', stop);
