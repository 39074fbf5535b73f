import { spawn } from 'node:child_process';
import { accessSync, constants, createWriteStream, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { WaitAborted, isReady, listensOn, waitFor } from './ports.ts';

/**
 * A server binary the tests run beside Floe (Prometheus, Alertmanager): started with its output
 * in a log file of `dir`, ready once `readyUrl` answers and its own pid listens on `port` (not a
 * neighbour that took the port), stopped with SIGTERM (SIGKILL after 10 s) and `dir` removed.
 */
/**
 * `bin` when it is an executable; else an error naming the Debian package that provides it and the
 * variable that points elsewhere: these tests must fail, not skip, on a machine without it.
 */
export function requireBinary(name: string, bin: string, debianPackage: string, envVariable: string): string {
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    throw new Error(`no ${name} binary at ${bin}: install the Debian package "${debianPackage}" (apt-get install -y ${debianPackage}; .ci/run does this), or point ${envVariable} at one`);
  }
  return bin;
}

export interface ChildServer {
  pid: number;
  /** Its output so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

export async function startChildServer(opts: { name: string; bin: string; args: string[]; dir: string; port: number; readyUrl: string }): Promise<ChildServer> {
  const logFile = join(opts.dir, `${opts.name.toLowerCase()}.log`);
  const out = createWriteStream(logFile);
  const child = spawn(opts.bin, opts.args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return ''; // not written yet
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    out.end();
    rmSync(opts.dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      `${opts.name} ${new URL(opts.readyUrl).pathname}`,
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new WaitAborted(`${opts.name.toLowerCase()} exited (${child.exitCode ?? child.signalCode}): ${log().slice(-2000)}`);
        return ((await isReady(opts.readyUrl)) && listensOn(child.pid!, opts.port)) || undefined;
      },
      60_000,
      200,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { pid: child.pid!, log, stop };
}
