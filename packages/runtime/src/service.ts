/**
 * What every service's `start(config)` returns. `ready` flips to false as soon as a stop begins,
 * so /ready reports 503 while in-flight work drains.
 */
export interface ServiceHandle {
  readonly name: string;
  /** Ports actually bound (useful when the config asked for port 0). */
  readonly ports: Readonly<Record<string, number>>;
  isReady(): boolean;
  /** Report not-ready from now on (load balancers stop routing) while still serving. */
  drain?(): void;
  stop(): Promise<void>;
}

export const SERVICE_NAMES = ['acceptor', 'writer', 'querier', 'compactor', 'router'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];
export const isServiceName = (v: string): v is ServiceName => (SERVICE_NAMES as readonly string[]).includes(v);
