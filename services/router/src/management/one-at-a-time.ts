/**
 * Runs tasks of the same key one after another in this process (tasks of other keys run freely).
 * For management actions whose second run must see the first one's end, not its middle.
 */
export function oneAtATime(): { run<T>(key: string, task: () => Promise<T>): Promise<T> } {
  const tails = new Map<string, Promise<unknown>>();
  return {
    async run<T>(key: string, task: () => Promise<T>): Promise<T> {
      const mine = (tails.get(key) ?? Promise.resolve()).then(task);
      // The next task waits for this one to settle, whatever its outcome.
      const tail = mine.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      try {
        return await mine;
      } finally {
        if (tails.get(key) === tail) tails.delete(key);
      }
    },
  };
}
