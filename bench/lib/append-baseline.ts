import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * The bare receive-and-append ingest baseline (append-baseline-server.ts) as a child process on
 * loopback: it answers 200 to a POST on any path once the body is appended, undecoded, to one
 * file with group-commit fdatasync (the WAL's fsync policy). stop() ends it and removes the file.
 */
export interface AppendBaseline {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

export async function startAppendBaseline(): Promise<AppendBaseline> {
  const file = join(tmpdir(), `floe-bench-baseline-${process.pid}-${Date.now()}.bin`);
  const child = spawn(process.execPath, [join(import.meta.dirname, 'append-baseline-server.ts'), file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`baseline server exited (${code})`)));
    createInterface({ input: child.stdout! }).once('line', (l) => resolve((JSON.parse(l) as { port: number }).port));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(file, { force: true });
    },
  };
}
