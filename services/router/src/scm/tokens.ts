import type { InstallationToken } from './host.ts';

/**
 * Installation access tokens (spec 2, source-context rule 7): minted on demand, held in this
 * process's memory only, reused until five minutes before they expire (the host gives them about
 * an hour), and forgotten at once when a link is removed. Concurrent callers of one installation
 * share one mint.
 */
export const TOKEN_REUSE_MARGIN_MS = 5 * 60_000;

export class InstallationTokens {
  readonly #tokens = new Map<number, InstallationToken>();
  readonly #pending = new Map<number, Promise<string>>();
  // Bumped by forget(): a mint that started before a removal must not store its token after it.
  readonly #generation = new Map<number, number>();

  readonly #mint: (installationId: number) => Promise<InstallationToken>;
  readonly #now: () => number;

  constructor(mint: (installationId: number) => Promise<InstallationToken>, now: () => number = Date.now) {
    this.#mint = mint;
    this.#now = now;
  }

  async get(installationId: number): Promise<string> {
    const held = this.#tokens.get(installationId);
    if (held && held.expiresAt.getTime() - TOKEN_REUSE_MARGIN_MS > this.#now()) return held.token;
    const pending = this.#pending.get(installationId);
    if (pending) return pending;
    const generation = this.#generation.get(installationId) ?? 0;
    const p = this.#mint(installationId)
      .then((t) => {
        if ((this.#generation.get(installationId) ?? 0) === generation) this.#tokens.set(installationId, t);
        return t.token;
      })
      .finally(() => {
        if (this.#pending.get(installationId) === p) this.#pending.delete(installationId);
      });
    this.#pending.set(installationId, p);
    return p;
  }

  /** The installation a token held here belongs to (the few held tokens are scanned). */
  installationOf(token: string): number | undefined {
    for (const [id, held] of this.#tokens) if (held.token === token) return id;
    return undefined;
  }

  forget(installationId: number): void {
    this.#tokens.delete(installationId);
    this.#pending.delete(installationId);
    this.#generation.set(installationId, (this.#generation.get(installationId) ?? 0) + 1);
  }
}
