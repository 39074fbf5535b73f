import type { ServiceName } from '@floe/runtime';

/**
 * What `floe <target>` can run. Spelled out here rather than taken from @floe/runtime's
 * SERVICE_NAMES so that the command line can be built without importing the runtime (most
 * commands never start a service); the type below fails to compile if the two lists part.
 */
const SERVICES = ['acceptor', 'writer', 'querier', 'compactor', 'router'] as const satisfies readonly ServiceName[];
type Unlisted = Exclude<ServiceName, (typeof SERVICES)[number]>;
const everyServiceListed: [Unlisted] extends [never] ? true : never = true;
void everyServiceListed;

export const TARGETS = [...SERVICES, 'planning', 'all'] as const;
