// Runs s3rver for tests in its own Node process, started by backends.ts (startTestS3).
//
// Why a child process: s3rver 3.7.1 encrypts ListObjectsV2 continuation tokens with DES, which
// OpenSSL 3 (Node >= 17) only provides with --openssl-legacy-provider. Without it every truncated
// V2 listing fails with a 500, so pagination could not be tested in the vitest worker itself.
//
// argv: <directory>. Prints one JSON line {"port": n} once listening; exits when stdin closes.
import S3rver from 's3rver';

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
