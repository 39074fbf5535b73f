import { describe, expect, it } from 'vitest';
import type { SchemaRegistry, SchemaRegistryDocument } from '@floe/meta';
import { storedTypeOf, validateAttributeSample, validateRegistryDocument, valueMatches } from './schema-registry-validation.ts';

const doc = (d: Partial<SchemaRegistryDocument>): SchemaRegistryDocument => ({ name: 'r', attributes: [], entities: [], metrics: [], ...d });
const stored = (id: string, d: Partial<SchemaRegistryDocument>): SchemaRegistry => ({
  ...doc(d),
  tenantId: 'acme',
  id,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  createdBy: null,
  updatedBy: null,
});

describe('schema registry validation', () => {
  it('accepts a consistent document', () => {
    const d = doc({
      attributes: [
        { key: 'http.request.method', type: 'string', examples: ['GET'] },
        { key: 'k8s.pod.uid', type: 'string' },
      ],
      entities: [{ type: 'k8s.pod', identifying_attributes: ['k8s.pod.uid'] }],
      metrics: [{ name: 'http.server.request.duration', instrument: 'histogram', unit: 's', attributes: ['http.request.method'] }],
    });
    expect(validateRegistryDocument(d, [])).toEqual([]);
  });

  it('reports duplicates, undefined references, wrong examples and naming', () => {
    const problems = validateRegistryDocument(
      doc({
        attributes: [
          { key: 'retry.count', type: 'int', examples: [1, 'two'] },
          { key: 'retry.count', type: 'int' },
          { key: 'userId', type: 'string' },
        ],
        entities: [{ type: 'svc', identifying_attributes: ['service.name'] }],
        metrics: [
          { name: 'm', instrument: 'counter', unit: '1', attributes: ['nope'] },
          { name: 'm', instrument: 'gauge', unit: '1' },
        ],
      }),
      [],
    );
    expect(problems).toEqual([
      { path: 'registry.attributes[0].examples[1]', severity: 'error', message: 'example "two" is not of type int' },
      { path: 'registry.attributes[1].key', severity: 'error', message: 'attribute retry.count is defined twice' },
      { path: 'registry.attributes[2].key', severity: 'warning', message: expect.stringMatching(/OpenTelemetry naming/) },
      { path: 'registry.entities[0].identifying_attributes[0]', severity: 'error', message: expect.stringMatching(/service\.name is not defined/) },
      { path: 'registry.metrics[0].attributes[0]', severity: 'error', message: expect.stringMatching(/nope is not defined/) },
      { path: 'registry.metrics[1].name', severity: 'error', message: 'metric m is defined twice' },
    ]);
  });

  it('keeps one definition per name across a tenant’s registries, and resolves references through them', () => {
    const others = [stored('base', { attributes: [{ key: 'service.name', type: 'string' }], entities: [{ type: 'service', identifying_attributes: ['service.name'] }] })];
    const problems = validateRegistryDocument(
      doc({ attributes: [{ key: 'service.name', type: 'int' }], entities: [{ type: 'service', identifying_attributes: ['service.name'] }, { type: 'svc2', identifying_attributes: ['service.name'] }] }),
      others,
    );
    expect(problems.map((p) => p.message)).toEqual(['attribute service.name is already defined in registry base', 'entity service is already defined in registry base']);
  });

  it('checks value types the way OTLP carries them', () => {
    expect(valueMatches('int', 3)).toBe(true);
    expect(valueMatches('int', 3.5)).toBe(false);
    expect(valueMatches('double', 3)).toBe(true);
    expect(valueMatches('boolean', 'true')).toBe(false);
    expect(valueMatches('string[]', ['a', 'b'])).toBe(true);
    expect(valueMatches('string[]', ['a', 1])).toBe(false);
    expect([storedTypeOf('int'), storedTypeOf('double'), storedTypeOf('boolean'), storedTypeOf('string'), storedTypeOf('int[]')]).toEqual(['int', 'double', 'bool', 'str', 'str']);
  });

  it('validates a sample of attributes: unknown keys warn, wrong types are errors', () => {
    const regs = [stored('base', { attributes: [{ key: 'retry.count', type: 'int' }, { key: 'tags', type: 'string[]' }] })];
    expect(validateAttributeSample({ 'retry.count': 'three', tags: ['a'], other: 1 }, regs)).toEqual([
      { path: 'attributes["retry.count"]', severity: 'error', message: 'attribute retry.count is int in registry base; got "three"' },
      { path: 'attributes["other"]', severity: 'warning', message: 'attribute other is not defined in any registry of the tenant' },
    ]);
  });
});
