import { describe, expect, it } from 'vitest';
import { deserializeValue, serializeDecimal, serializeValue } from './bounds.ts';
import { applyTransform, humanPartitionValue, partitionPath } from './transforms.ts';
import type { PartitionSpec, Schema } from './types.ts';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('single-value serialization', () => {
  it('encodes each primitive as the spec says', () => {
    expect(hex(serializeValue('int', 1))).toBe('01000000');
    expect(hex(serializeValue('int', -2))).toBe('feffffff');
    expect(hex(serializeValue('date', 19000))).toBe('384a0000');
    expect(hex(serializeValue('long', 1n))).toBe('0100000000000000');
    expect(hex(serializeValue('timestamptz', 1_700_000_000_000_000n))).toBe(Buffer.from(new BigInt64Array([1_700_000_000_000_000n]).buffer).toString('hex'));
    expect(hex(serializeValue('timestamptz', new Date(1000)))).toBe(hex(serializeValue('long', 1_000_000)));
    expect(hex(serializeValue('double', 1.5))).toBe('000000000000f83f');
    expect(hex(serializeValue('float', 1.5))).toBe('0000c03f');
    expect(hex(serializeValue('boolean', true))).toBe('01');
    expect(hex(serializeValue('boolean', false))).toBe('00');
    expect(Buffer.from(serializeValue('string', 'héllo')).toString('utf8')).toBe('héllo');
    expect(hex(serializeValue('uuid', 'f79c3e09-677c-4dbd-a479-3f349cb785e7'))).toBe('f79c3e09677c4dbda4793f349cb785e7');
    expect(hex(serializeDecimal(1234n))).toBe('04d2');
    expect(hex(serializeDecimal(-1n))).toBe('ff');
    expect(hex(serializeDecimal(128n))).toBe('0080');
    expect(hex(serializeDecimal(-129n))).toBe('ff7f');
  });

  it('round-trips', () => {
    expect(deserializeValue('int', serializeValue('int', -7))).toBe(-7);
    expect(deserializeValue('long', serializeValue('long', -(2n ** 62n)))).toBe(-(2n ** 62n));
    expect(deserializeValue('double', serializeValue('double', Math.PI))).toBe(Math.PI);
    expect(deserializeValue('string', serializeValue('string', 'checkout'))).toBe('checkout');
    expect(deserializeValue('boolean', serializeValue('boolean', true))).toBe(true);
    expect(deserializeValue('uuid', serializeValue('uuid', 'f79c3e09-677c-4dbd-a479-3f349cb785e7'))).toBe('f79c3e09-677c-4dbd-a479-3f349cb785e7');
    expect(deserializeValue('decimal(10, 2)', serializeDecimal(-12345n))).toBe(-12345n);
  });
});

describe('transforms', () => {
  it('hour/day/month/year of a µs timestamp', () => {
    const us = BigInt(Date.UTC(2026, 4, 1, 13, 45)) * 1000n;
    const hour = applyTransform('hour', 'timestamptz', us) as number;
    expect(hour).toBe(Math.floor(Date.UTC(2026, 4, 1, 13) / 3_600_000));
    expect(applyTransform('hour', 'timestamptz', -1)).toBe(-1); // floor, not truncation
    expect(applyTransform('day', 'timestamptz', us)).toBe(Math.floor(Date.UTC(2026, 4, 1) / 86_400_000));
    expect(applyTransform('month', 'timestamptz', us)).toBe((2026 - 1970) * 12 + 4);
    expect(applyTransform('year', 'timestamptz', us)).toBe(56);
    expect(applyTransform('hour', 'timestamptz_ns', us * 1000n)).toBe(hour);
    expect(applyTransform('identity', 'string', 'x')).toBe('x');
    expect(humanPartitionValue('hour', 'int', hour)).toBe('2026-05-01-13');
  });

  it('builds a partition path', () => {
    const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'timestamp', required: true, type: 'timestamptz' }, { id: 2, name: 'svc', required: false, type: 'string' }] };
    const spec: PartitionSpec = { 'spec-id': 0, fields: [{ 'source-id': 1, 'field-id': 1000, name: 'timestamp_hour', transform: 'hour' }, { 'source-id': 2, 'field-id': 1001, name: 'svc', transform: 'identity' }] };
    expect(partitionPath(spec, schema, { timestamp_hour: 0, svc: 'a b' })).toBe('timestamp_hour=1970-01-01-00/svc=a%20b');
  });
});
