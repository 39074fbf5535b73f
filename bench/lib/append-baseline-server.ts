import { createServer } from 'node:http';
import { open } from 'node:fs/promises';

/**
 * The ingest baseline: receives the same request bodies and appends them, undecoded, to one file
 * with the WAL's fsync policy (group commit: every body waiting while an fsync runs shares the next
 * one; a request is answered only after its bytes are synced). No auth, no decode, no rows.
 */
const file = process.argv[2]!;
const fh = await open(file, 'a');
let pending: Array<{ body: Buffer; done: () => void }> = [];
let flushing = false;

async function flush(): Promise<void> {
  flushing = true;
  while (pending.length > 0) {
    const batch = pending;
    pending = [];
    await fh.writev(batch.map((b) => b.body));
    await fh.datasync();
    for (const b of batch) b.done();
  }
  flushing = false;
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    pending.push({ body: Buffer.concat(chunks), done: () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end() });
    if (!flushing) void flush();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
