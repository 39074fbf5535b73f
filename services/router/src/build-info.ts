/**
 * The `status/buildinfo` body each compatible API answers (Loki's, Prometheus's and Tempo's have
 * the same fields). Clients read `version` to decide which features to use, so each API claims
 * the upstream version whose API it serves; the other fields name Floe.
 */
export function buildInfo(version: string) {
  return { version, revision: 'floe', branch: 'floe', buildUser: 'floe', buildDate: '20260101-00:00:00', goVersion: 'n/a' };
}
