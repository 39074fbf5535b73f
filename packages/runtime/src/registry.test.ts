import { describe, expect, it } from 'vitest';
import { resolveOrder, startModules, type ModuleDef } from './index.ts';

const log: string[] = [];
const mod = (name: string, deps: string[] = []): ModuleDef<null> => ({
  name,
  deps,
  start: async () => {
    log.push(`start ${name}`);
    return { name, ports: {}, isReady: () => true, stop: async () => void log.push(`stop ${name}`) };
  },
});
const defs = [mod('db'), mod('store'), mod('writer', ['db', 'store']), mod('router', ['db']), mod('all', ['writer', 'router'])];

describe('module registry', () => {
  it('orders dependencies first and stops in reverse', async () => {
    expect(resolveOrder(defs, ['all']).map((d) => d.name)).toEqual(['db', 'store', 'writer', 'router', 'all']);
    log.length = 0;
    const started = await startModules(defs, ['router'], null);
    await started.stop();
    expect(log).toEqual(['start db', 'start router', 'stop router', 'stop db']);
  });

  it('rejects unknown targets and cycles', () => {
    expect(() => resolveOrder(defs, ['nope'])).toThrow(/unknown module "nope"/);
    expect(() => resolveOrder([mod('a', ['b']), mod('b', ['a'])], ['a'])).toThrow(/cycle: a → b → a/);
  });
});

describe('graceful stop', () => {
  it('reports not-ready for the drain delay before stopping', async () => {
    let ready = true;
    let stoppedAt = 0;
    const def: ModuleDef<null> = {
      name: 'svc',
      deps: [],
      start: async () => ({ name: 'svc', ports: {}, isReady: () => ready, drain: () => void (ready = false), stop: async () => void (stoppedAt = Date.now()) }),
    };
    const started = await startModules([def], ['svc'], null);
    const stopping = started.stop(150);
    expect(started.isReady()).toBe(false);
    expect(stoppedAt).toBe(0);
    await stopping;
    expect(stoppedAt).toBeGreaterThan(0);
  });
});
