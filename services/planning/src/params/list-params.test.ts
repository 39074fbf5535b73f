import { describe, expect, it } from 'vitest';
import { parseListParams, parseTimestamp, type ListParamName } from './list-params.ts';

const ALL: ListParamName[] = ['page', 'per_page', 'q', 'updated_since', 'tag', 'assigned_to_user', 'status', 'parking_lot', 'fields'];
const parse = (query: Record<string, unknown>, defaultPerPage?: number) => parseListParams(query, { accepted: ALL, fieldNames: ['id', 'name', 'tags'], defaultPerPage });

describe('parseListParams', () => {
  it('defaults to page 1 of 30, or the endpoint default', () => {
    expect(parse({})).toEqual({ page: 1, perPage: 30 });
    expect(parse({}, 20)).toEqual({ page: 1, perPage: 20 });
  });

  it.each([
    [{ page: '3', per_page: '200' }, { page: 3, perPage: 200 }],
    [{ per_page: '1' }, { page: 1, perPage: 1 }],
    [{ q: '  Checkout ' }, { q: 'Checkout' }],
    [{ q: '   ' }, {}],
    [{ tag: 'ux' }, { tag: 'ux' }],
    [{ assigned_to_user: 'Ann@Example.com' }, { assignedToUser: { by: 'email', email: 'ann@example.com' } }],
    [{ assigned_to_user: '0123456789abcdef' }, { assignedToUser: { by: 'id', id: '0123456789abcdef' } }],
    [{ status: 'Shipped' }, { status: 'Shipped' }],
    [{ parking_lot: 'false' }, { parkingLot: false }],
    [{ fields: 'name, tags,name' }, { fields: ['name', 'tags'] }],
    [{ updated_since: '2024-05-01T12:00:00Z' }, { updatedSince: new Date('2024-05-01T12:00:00.000Z') }],
  ])('reads %j', (query, expected) => {
    expect(parse(query)).toMatchObject(expected);
  });

  it.each([
    [{ page: '0' }, 'page must be an integer >= 1'],
    [{ page: '-1' }, 'page must be an integer >= 1'],
    [{ page: '1.5' }, 'page must be an integer >= 1'],
    [{ page: '1e3' }, 'page must be an integer >= 1'],
    [{ page: '99999999999999999999' }, 'page must be an integer >= 1'],
    [{ per_page: '0' }, 'per_page must be an integer from 1 to 200'],
    [{ per_page: '201' }, 'per_page must be an integer from 1 to 200'],
    [{ per_page: '' }, 'per_page must be an integer from 1 to 200'],
    [{ parking_lot: '1' }, 'parking_lot must be true or false'],
    [{ assigned_to_user: 'ann' }, 'assigned_to_user must be a user id or an email address'],
    [{ fields: 'name,password' }, 'fields: unknown field "password"; known: id, name, tags'],
    [{ fields: ' , ' }, 'fields must name at least one field'],
    [{ tag: ['a', 'b'] }, 'tag must be given once'],
    [{ q: 'x'.repeat(201) }, 'q must be at most 200 characters'],
    [{ q: 'a\u0000b' }, 'q must not contain NUL characters'],
    [{ sort: 'name' }, 'unknown query parameter "sort"'],
  ])('refuses %j', (query, message) => {
    expect(() => parse(query)).toThrow(expect.objectContaining({ kind: 'bad_data', message: expect.stringContaining(message) }));
  });

  it('refuses parameters the endpoint does not take', () => {
    expect(() => parseListParams({ status: 'x' }, { accepted: ['page'] })).toThrow(/unknown query parameter "status"; this endpoint takes page/);
  });
});

describe('parseTimestamp', () => {
  it.each([
    ['2024-05-01', '2024-05-01T00:00:00.000Z'],
    ['2024-05-01T12:30', '2024-05-01T12:30:00.000Z'],
    ['2024-05-01T12:30:15', '2024-05-01T12:30:15.000Z'],
    ['2024-05-01T12:30:15.123456Z', '2024-05-01T12:30:15.123Z'],
    ['2024-05-01T12:30:15+02:00', '2024-05-01T10:30:15.000Z'],
    ['2024-05-01T12:30:15-0130', '2024-05-01T14:00:15.000Z'],
    ['2024-02-29T00:00:00z', '2024-02-29T00:00:00.000Z'],
  ])('reads %s as UTC %s', (input, iso) => {
    expect(parseTimestamp('updated_since', input).toISOString()).toBe(iso);
  });

  it.each(['yesterday', '2024-5-1', '2023-02-29', '2024-13-01', '2024-04-31', '2024-05-01T24:00:00Z', '2024-05-01T12:60Z', '1714564800', '2024-05-01T12:00:00 UTC'])('refuses %s', (input) => {
    expect(() => parseTimestamp('updated_since', input)).toThrow(/updated_since must be an ISO 8601 timestamp/);
  });
  // PostgreSQL reads years 1 to 9999 only: outside them (year 0, or past 9999 once the zone is
  // applied) the database failed with a 500.
  it.each(['0000-01-01', '0000-12-31T23:59:59Z', '0001-01-01T00:00:00+14:00', '9999-12-31T23:59:59-14:00', '9999-12-31T23:59:59-23:59'])('refuses %s, outside years 1 to 9999 UTC', (input) => {
    expect(() => parseTimestamp('updated_since', input)).toThrow(expect.objectContaining({ kind: 'bad_data', message: 'updated_since must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z' }));
  });
  it.each([
    ['0001-01-01', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  ])('takes the ends of that range (%s)', (input, iso) => {
    expect(parseTimestamp('updated_since', input).toISOString()).toBe(iso);
  });
});
