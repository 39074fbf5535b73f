import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig } from '@floe/config';
import { TARGETS } from '@floe/cli';

/**
 * No Docker engine runs here, so docker-compose.yml and deploy/ are kept correct by validation:
 * every service runs a real `floe` target, the shared config file passes Floe's own validation
 * with the environment each container gets, and probes point at the ports that config binds.
 */
const root = join(import.meta.dirname, '../../..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');
const configFile = join(root, 'deploy/config/floe-cluster.yaml');

const readyPort = (cfg: ReturnType<typeof loadConfig>, target: string): number =>
  ({ acceptor: cfg.acceptor.http_port, router: cfg.router.port, writer: cfg.writer.admin_port, querier: cfg.querier.admin_port, compactor: cfg.compactor.admin_port, planning: cfg.planning.port })[target]!;

describe('deployment files', () => {
  it('docker-compose services run valid targets with a valid config', () => {
    const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, { command?: string[]; environment?: Record<string, string>; healthcheck?: { test: string[] } }> };
    const floeServices = Object.entries(compose.services).filter(([, s]) => s.command && (TARGETS as readonly string[]).includes(s.command[0]!));
    expect(floeServices.map(([n]) => n).sort()).toEqual(['acceptor', 'compactor', 'planning', 'querier', 'router', 'writer']);
    for (const [name, svc] of floeServices) {
      const env = Object.fromEntries(Object.entries(svc.environment ?? {}).map(([k, v]) => [k, String(v).replace(/\$\{[^}]+:-([^}]*)\}/g, '$1')]));
      const cfg = loadConfig({ file: configFile, env });
      expect(cfg.meta.kind).toBe('pg');
      expect(cfg.storage.kind).toBe('s3');
      expect(cfg.limits.store).toBe('redis');
      expect(svc.healthcheck!.test.join(' ')).toContain(`:${readyPort(cfg, name)}/ready`);
    }
    // Grafana's data sources reach the router's port and read the provisioning under deploy/.
    const grafana = parse(read('docker-compose.yml'), { merge: true }).services.grafana as { environment: Record<string, string>; volumes: string[] };
    expect(grafana.environment.FLOE_URL).toBe(`http://router:${loadConfig({ file: configFile, env: {} }).router.port}`);
    expect(grafana.volumes).toEqual(['./deploy/grafana/provisioning:/etc/grafana/provisioning:ro']);
    expect(read('deploy/grafana/provisioning/datasources/floe.yaml')).toContain('${FLOE_URL}/tracequery');
    // The Redis the shared config names runs beside them.
    expect(new URL(loadConfig({ file: configFile, env: {} }).limits.redis_url).hostname).toBe('redis');
    expect(Object.keys(compose.services)).toContain('redis');
  });

  it('Kubernetes deployments run valid targets and probe /ready on the configured port', () => {
    const docs = parseAllDocuments(read('deploy/k8s/floe.yaml')).map((d) => d.toJS() as Record<string, any>);
    expect(docs.every((d) => typeof d.kind === 'string' && d.metadata?.name)).toBe(true);
    const cm = docs.find((d) => d.kind === 'ConfigMap')!;
    expect(cm.data['floe.yaml']).toBe(read('deploy/config/floe-cluster.yaml'));
    const cfg = loadConfig({ file: configFile, env: {} });
    const deployments = docs.filter((d) => d.kind === 'Deployment');
    expect(deployments).toHaveLength(6);
    for (const d of deployments) {
      const c = d.spec.template.spec.containers[0];
      const target = c.args[0] as string;
      expect(TARGETS).toContain(target);
      expect(c.readinessProbe.httpGet).toEqual({ path: '/ready', port: readyPort(cfg, target) });
      expect(docs.some((s) => s.kind === 'Service' && s.metadata.name === target)).toBe(true);
    }
    expect(cfg.router.querier_urls).toEqual(['querier:50054']);
    // The router reaches the compactor's admin port for /api/v1/ops/compact.
    expect(new URL(cfg.router.compactor_url).host).toBe(`compactor:${cfg.compactor.admin_port}`);
  });
});
