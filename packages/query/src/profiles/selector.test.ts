import { describe, expect, it } from 'vitest';
import { isFloeError } from '@floe/errors';
import { flamegraphMetadata, parseProfileTypeRef, profileTypeInfo, profileTypeKey, sameProfileType } from './profile-type.ts';
import { parseOptionalProfileSelector, parseProfileSelector, parseTypedProfileSelector } from './selector.ts';

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const cpuRef = { name: 'process_cpu', sampleType: 'cpu', sampleUnit: 'nanoseconds', period: { type: 'cpu', unit: 'nanoseconds' } };

describe('parseProfileSelector: good selectors', () => {
  it.each([
    [CPU, { profileType: cpuRef, matchers: [] }],
    [`${CPU}{}`, { profileType: cpuRef, matchers: [] }],
    [`  ${CPU}{service_name="api"}`, { profileType: cpuRef, matchers: [{ label: 'service_name', op: '=', value: 'api' }] }],
    [
      `${CPU}{service_name!="a", env=~"prod|stage", region!~"eu-.*"}`,
      {
        profileType: cpuRef,
        matchers: [
          { label: 'service_name', op: '!=', value: 'a' },
          { label: 'env', op: '=~', value: 'prod|stage' },
          { label: 'region', op: '!~', value: 'eu-.*' },
        ],
      },
    ],
    // Spec 1: a three-part name addresses every period of that type.
    ['memory:inuse_space:bytes{service_name="api"}', { profileType: { name: 'memory', sampleType: 'inuse_space', sampleUnit: 'bytes' }, matchers: [{ label: 'service_name', op: '=', value: 'api' }] }],
    // Empty parts and a sixth (delta) part, as Pyroscope's ids allow.
    ['process_cpu:samples:count::milliseconds', { profileType: { name: 'process_cpu', sampleType: 'samples', sampleUnit: 'count', period: { type: '', unit: 'milliseconds' } }, matchers: [] }],
    [`${CPU}:delta{}`, { profileType: cpuRef, matchers: [] }],
    // Type parts that are not PromQL identifiers (a dot in a unit) still parse.
    ['wall:wall:micro.seconds:wall:micro.seconds{a="b"}', { profileType: { name: 'wall', sampleType: 'wall', sampleUnit: 'micro.seconds', period: { type: 'wall', unit: 'micro.seconds' } }, matchers: [{ label: 'a', op: '=', value: 'b' }] }],
    // Dotted attribute keys in Prometheus 3's quoted form; escapes in values.
    [`${CPU}{"thread.name"="main \\"1\\""}`, { profileType: cpuRef, matchers: [{ label: 'thread.name', op: '=', value: 'main "1"' }] }],
    // The type as a __name__ matcher; no type at all (discovery filters).
    [`{__name__="${CPU}", service_name="api"}`, { profileType: cpuRef, matchers: [{ label: 'service_name', op: '=', value: 'api' }] }],
    ['{service_name="api"}', { profileType: undefined, matchers: [{ label: 'service_name', op: '=', value: 'api' }] }],
    ['{__name__="memory"}', { profileType: undefined, matchers: [{ label: '__name__', op: '=', value: 'memory' }] }],
  ])('%s', (text, expected) => {
    expect(parseProfileSelector(text)).toEqual(expected);
  });
});

describe('parseProfileSelector: bad selectors are bad_data with FLOE_ERR_PROFILE_SELECTOR', () => {
  it.each([
    ['', /empty profile selector/],
    ['   ', /empty profile selector/],
    ['{}', /empty profile selector/],
    ['process_cpu', /invalid profile type "process_cpu": expected <name>:<sample_type>:<sample_unit>/],
    ['a:b', /invalid profile type "a:b"/],
    ['a:b:c:d', /invalid profile type "a:b:c:d"/],
    [':cpu:nanoseconds', /name and sample type must not be empty/],
    [`${CPU}{service_name="api"`, /^parse error at line 1, col \d+: unexpected end of input/],
    [`${CPU}{service_name=api}`, /^parse error at line 1, col 58: unexpected "api}"/],
    [`${CPU}{env=~"(unclosed"}`, /invalid regular expression/],
    [`${CPU}{a="b"} offset 5m`, /profile type and label matchers only/],
    [`sum(${CPU})`, /invalid profile type/],
    [`${CPU}{a="b"} + 1`, /profile type and label matchers only/],
    [`${CPU}{__name__="${CPU}"}`, /must not be set twice/],
    [`${CPU}{a="b"}\n{c="d"}`, /parse error at line 2/],
  ])('%j → %s', (text, message) => {
    let err: unknown;
    try {
      parseProfileSelector(text);
    } catch (e) {
      err = e;
    }
    expect(isFloeError(err)).toBe(true);
    expect(err).toMatchObject({ kind: 'bad_data', code: 'FLOE_ERR_PROFILE_SELECTOR' });
    expect((err as Error).message).toMatch(message);
  });

  it('render selectors must name a type', () => {
    expect(() => parseTypedProfileSelector('{service_name="api"}')).toThrow(/names no profile type/);
    expect(parseTypedProfileSelector(`${CPU}{}`).profileType).toEqual(cpuRef);
  });

  it('Connect matchers may be empty or name no type', () => {
    for (const text of ['', '  ', '{}', ' { } ']) expect(parseOptionalProfileSelector(text)).toEqual({ profileType: undefined, matchers: [] });
    expect(parseOptionalProfileSelector('{service_name="api"}')).toEqual({ profileType: undefined, matchers: [{ label: 'service_name', op: '=', value: 'api' }] });
    expect(parseOptionalProfileSelector(`${CPU}{}`).profileType).toEqual(cpuRef);
    expect(() => parseOptionalProfileSelector('{service_name=}')).toThrow(/parse error/);
  });
});

describe('profile types', () => {
  it('five parts name one stored id, three parts a prefix of ids', () => {
    expect(profileTypeKey(parseProfileTypeRef(CPU))).toEqual({ exact: CPU });
    expect(profileTypeKey(parseProfileTypeRef('memory:alloc_space:bytes'))).toEqual({ prefix: 'memory:alloc_space:bytes:' });
  });

  it('lists a stored id with its parts', () => {
    expect(profileTypeInfo('memory:alloc_space:bytes:space:bytes')).toEqual({ ID: 'memory:alloc_space:bytes:space:bytes', name: 'memory', sampleType: 'alloc_space', sampleUnit: 'bytes', periodType: 'space', periodUnit: 'bytes' });
  });

  it('compares references (render-diff sides)', () => {
    expect(sameProfileType(parseProfileTypeRef(CPU), parseProfileTypeRef(`${CPU}:delta`))).toBe(true);
    expect(sameProfileType(parseProfileTypeRef(CPU), parseProfileTypeRef('process_cpu:cpu:nanoseconds'))).toBe(true);
    expect(sameProfileType(parseProfileTypeRef(CPU), parseProfileTypeRef('memory:alloc_space:bytes:space:bytes'))).toBe(false);
  });

  it.each([
    [CPU, { units: 'samples', name: 'cpu', sampleRate: 1_000_000_000 }],
    ['memory:alloc_space:bytes:space:bytes', { units: 'bytes', name: 'alloc_space', sampleRate: 100 }],
    ['memory:inuse_objects:count:space:bytes', { units: 'objects', name: 'inuse_objects', sampleRate: 100 }],
    ['mutex:delay:nanoseconds:contentions:count', { units: 'nanoseconds', name: 'delay', sampleRate: 100 }],
  ])('flamebearer metadata of %s', (id, expected) => {
    expect(flamegraphMetadata(parseProfileTypeRef(id))).toEqual(expected);
  });
});
