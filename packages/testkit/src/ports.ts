import { createServer } from 'node:net';
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** Asks the OS for free loopback ports (for child processes that need them up front). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<import('node:net').Server>((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/**
 * Starts something that must know its ports before it binds them (a router whose own URL goes in its
 * config): draws `n` free ports and calls `start` with them, drawing again when one was taken in
 * between by a test running beside (EADDRINUSE). `start` must clean up after itself when it throws.
 */
export async function onFreePorts<T>(n: number, start: (ports: number[]) => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await freePorts(n));
    } catch (err) {
      if (!isAddressInUse(err) || attempt >= attempts) throw err;
    }
  }
}

function isAddressInUse(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE' || e.message.includes('EADDRINUSE')) return true;
  }
  return false;
}

/** Thrown from a waitFor callback to stop waiting at once (e.g. the process being waited on died). */
export class WaitAborted extends Error {}

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      if (err instanceof WaitAborted) throw err;
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
}

export async function isReady(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    return res.status === 200;
  } catch {
    return false;
  }
}

/**
 * Whether process `pid` holds a listening TCP socket on `port`. A port picked by freePorts is free
 * only until someone binds it: a parallel test's process may take it before the child we spawned
 * does, and would then answer our /ready in its place. Reads /proc (Linux); elsewhere it cannot
 * tell and says yes.
 */
export function listensOn(pid: number, port: number): boolean {
  if (!existsSync('/proc/net/tcp')) return true;
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; state 0A is LISTEN; field 9 is the socket's inode.
      if (f.length > 9 && f[1]!.endsWith(`:${hexPort}`) && f[3] === '0A') inodes.add(f[9]!);
    }
  }
  if (inodes.size === 0) return false;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m && inodes.has(m[1]!)) return true;
    } catch {
      // closed between readdir and readlink
    }
  }
  return false;
}
