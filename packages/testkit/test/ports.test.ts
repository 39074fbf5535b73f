import { createServer } from 'node:net';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freePorts, listensOn } from '../src/index.ts';

describe('listensOn', () => {
  it('tells the process holding a listening port from any other', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const [unbound] = await freePorts(1);
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'], { stdio: 'ignore' });
    try {
      expect(listensOn(process.pid, port)).toBe(true);
      expect(listensOn(other.pid!, port)).toBe(false);
      expect(listensOn(process.pid, unbound!)).toBe(false);
    } finally {
      other.kill('SIGKILL');
      await new Promise((r) => server.close(r));
    }
  });
});
