import { describe, expect, it } from 'vitest';
import { parseProductRef, parseRecordRef, referenceNumber, requirementReference } from './reference-numbers.ts';

describe('referenceNumber', () => {
  it.each([
    ['feature', 'PRJ1', 12, 'PRJ1-12'],
    ['release', 'PRJ1', 3, 'PRJ1-R-3'],
    ['epic', 'PRJ1', 2, 'PRJ1-E-2'],
    ['initiative', 'APP', 1, 'APP-I-1'],
    ['goal', 'APP', 7, 'APP-G-7'],
    ['idea', 'PRJ1', 4, 'PRJ1-IDEA-4'],
  ] as const)('%s %s #%i is %s', (kind, prefix, n, expected) => {
    expect(referenceNumber(kind, prefix, n)).toBe(expected);
  });

  it('numbers requirements after their feature', () => {
    expect(requirementReference('PRJ1-12', 1)).toBe('PRJ1-12-1');
  });
});

describe('parseRecordRef', () => {
  it.each([
    ['6776', { by: 'id', id: '6776' }],
    ['999999999999999999', { by: 'id', id: '999999999999999999' }],
    ['PRJ1-12', { by: 'reference', reference: 'PRJ1-12' }],
    ['prj1-r-3', { by: 'reference', reference: 'PRJ1-R-3' }],
    ['PRJ1-E-2', { by: 'reference', reference: 'PRJ1-E-2' }],
    ['PRJ1-12-1', { by: 'reference', reference: 'PRJ1-12-1' }],
    ['PRJ1-I-1', { by: 'reference', reference: 'PRJ1-I-1' }],
    ['PRJ1-IDEA-4', { by: 'reference', reference: 'PRJ1-IDEA-4' }],
    ['prj1-idea-4', { by: 'reference', reference: 'PRJ1-IDEA-4' }],
    // A product whose prefix is IDEA numbers its features IDEA-n: still a reference number.
    ['IDEA-3', { by: 'reference', reference: 'IDEA-3' }],
  ])('reads %s', (value, expected) => {
    expect(parseRecordRef(value)).toEqual(expected);
  });

  // Neither an id nor a reference number: the routes answer 404 without asking the database.
  it.each(['', '0', '0123', '1000000000000000000', '1 OR 1=1', "PRJ1-12'", 'PRJ1', '-12', 'PRJ1--12', 'PRJ1-RR-3', 'ABCDEFGHIJK-1', 'PRJ1-12-1-1', 'PRJ1-IDEAS-1', 'PRJ1-IDE-1', 'PRJ1-IDEA', 'PRJ1-IDEA-', 'PRJ1-IDEA-IDEA-1', 'PRJ1-I-IDEA-1'])('refuses %j', (value) => {
    expect(parseRecordRef(value)).toBeUndefined();
  });
});

describe('parseProductRef', () => {
  it.each([
    ['131414752', { by: 'id', id: '131414752' }],
    ['PRJ1', { by: 'prefix', prefix: 'PRJ1' }],
    ['prj1', { by: 'prefix', prefix: 'PRJ1' }],
  ])('reads %s', (value, expected) => {
    expect(parseProductRef(value)).toEqual(expected);
  });

  it.each(['1PRJ', 'PRJ-1', 'ABCDEFGHIJK', ''])('refuses %j', (value) => {
    expect(parseProductRef(value)).toBeUndefined();
  });
});
