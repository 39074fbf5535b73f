import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
export const FLOE_BIN = join(REPO_ROOT, 'packages/cli/bin/floe.js');
// The pinned Node 24 binary itself, not the node_modules/.bin/node shim: the shim runs node as a
// child of a shell (no exec), so a signal to the spawned process would reach only the shell and
// leave the service running, orphaned.
export const NODE_BIN = join(REPO_ROOT, 'node_modules/node/bin/node');

/** Runs the real `floe` command as a child process, as an operator would; `input` is its stdin. */
export function runFloeCli(args: string[], env: Record<string, string> = {}, input?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(NODE_BIN, [FLOE_BIN, ...args], { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    if (input !== undefined) child.stdin!.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolvePromise({ code, stdout, stderr }));
  });
}
