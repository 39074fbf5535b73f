import type { ServiceHandle } from './service.ts';

/**
 * The module registry: one place that lists modules, their dependencies and how to start them.
 * `startModules(registry, targets)` starts the dependency closure of the targets in dependency
 * order and returns one handle that stops them in reverse order. `all` is a composite target.
 */
export interface ModuleDef<Ctx> {
  readonly name: string;
  readonly deps: readonly string[];
  start(ctx: Ctx): Promise<ServiceHandle>;
}

export function resolveOrder<Ctx>(defs: readonly ModuleDef<Ctx>[], targets: readonly string[]): ModuleDef<Ctx>[] {
  const byName = new Map(defs.map((d) => [d.name, d]));
  const order: ModuleDef<Ctx>[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, path: string[]) => {
    const def = byName.get(name);
    if (!def) throw new Error(`unknown module "${name}" (known: ${[...byName.keys()].join(', ')})`);
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') throw new Error(`module dependency cycle: ${[...path, name].join(' → ')}`);
    state.set(name, 'visiting');
    for (const dep of def.deps) visit(dep, [...path, name]);
    state.set(name, 'done');
    order.push(def);
  };
  for (const t of targets) visit(t, []);
  return order;
}

export interface StartedModules {
  readonly handles: readonly ServiceHandle[];
  get(name: string): ServiceHandle | undefined;
  isReady(): boolean;
  /**
   * Graceful stop: every module reports not-ready for `drainMs` (so load balancers move away)
   * while still serving, then modules stop in reverse start order.
   */
  stop(drainMs?: number): Promise<void>;
}

export async function startModules<Ctx>(defs: readonly ModuleDef<Ctx>[], targets: readonly string[], ctx: Ctx): Promise<StartedModules> {
  const order = resolveOrder(defs, targets);
  const handles: ServiceHandle[] = [];
  const stopAll = async (drainMs = 0) => {
    if (drainMs > 0) {
      for (const h of handles) h.drain?.();
      await new Promise((r) => setTimeout(r, drainMs));
    }
    const errors: unknown[] = [];
    for (const h of [...handles].reverse()) {
      try {
        await h.stop();
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, 'some modules failed to stop');
  };
  try {
    for (const def of order) handles.push(await def.start(ctx));
  } catch (err) {
    await stopAll().catch(() => undefined);
    throw err;
  }
  return {
    handles,
    get: (name) => handles.find((h) => h.name === name),
    isReady: () => handles.every((h) => h.isReady()),
    stop: stopAll,
  };
}
