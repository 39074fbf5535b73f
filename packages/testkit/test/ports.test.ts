import { createServer } from 'node:net';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freePorts, listensOn, onFreePorts } from '../src/index.ts';

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

describe('onFreePorts', () => {
  it('draws new ports when the first ones were taken before the start could bind them', async () => {
    const squatter = createServer();
    const tried: number[] = [];
    try {
      const port = await onFreePorts(1, async ([p]) => {
        tried.push(p!);
        // The first draw is taken by someone else before we bind it, as a parallel test might.
        if (tried.length === 1) await new Promise<void>((r) => squatter.listen(p, '127.0.0.1', r));
        const server = createServer();
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(p, '127.0.0.1', resolve);
        });
        await new Promise((r) => server.close(r));
        return p!;
      });
      expect(tried).toHaveLength(2);
      expect(port).toBe(tried[1]);
      expect(port).not.toBe(tried[0]);
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  });

  it('gives up after its attempts and passes on errors that are not a taken port', async () => {
    let calls = 0;
    const taken = Object.assign(new Error('listen EADDRINUSE: address already in use'), { code: 'EADDRINUSE' });
    await expect(onFreePorts(1, async () => { calls++; throw taken; }, 2)).rejects.toBe(taken);
    expect(calls).toBe(2);
    calls = 0;
    await expect(onFreePorts(1, async () => { calls++; throw new Error('bad config'); })).rejects.toThrow('bad config');
    expect(calls).toBe(1);
  });
});
