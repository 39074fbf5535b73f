import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { tableRefs } from './table-refs.ts';

const caller = { tenant: 'acme', dataset: 'default', isAdmin: false };

describe('tableRefs', () => {
  it('pins bare and sql_ names to the caller', () => {
    const refs = tableRefs('SELECT * FROM traces JOIN sql_traces USING (trace_id)', caller);
    expect(refs.find((r) => r.viewName === 'traces')).toMatchObject({ tenant: 'acme', dataset: 'default' });
    expect(refs.find((r) => r.viewName === 'sql_traces')).toMatchObject({ tenant: 'acme', dataset: 'default' });
  });

  it('resolves three-part names of the caller, quoted or not', () => {
    const refs = tableRefs('SELECT * FROM acme.prod.traces UNION ALL SELECT * FROM "acme"."default"."traces"', caller);
    expect(refs.map((r) => r.viewName)).toEqual(expect.arrayContaining(['acme.prod.traces', 'acme.default.traces']));
  });

  it.each(['SELECT * FROM other.default.traces', 'SELECT * FROM "other" . "default" . traces', 'select 1 from OTHER.default.TRACES'])(
    'refuses another tenant: %s',
    (sql) => {
      expect(() => tableRefs(sql, caller)).toThrowError(FloeError);
      try {
        tableRefs(sql, caller);
      } catch (err) {
        expect((err as FloeError).kind).toBe('forbidden');
      }
    },
  );

  it('scans a ticket-sized text of name characters in one pass (the scan was quadratic: minutes for 256 KiB)', () => {
    const n = 256 * 1024;
    for (const filler of ['x'.repeat(n), '"'.repeat(n), '"a'.repeat(n / 2), 'a.'.repeat(n / 2), '"a".'.repeat(n / 4), `a${' '.repeat(n)}`]) {
      expect(tableRefs(`SELECT '${filler}' FROM traces`, caller).map((r) => r.viewName)).toContain('traces');
    }
    // Names right after a keyword or a quote still count.
    expect(() => tableRefs('SELECT*FROM"other".default.traces', caller)).toThrowError(/tenant "other"/);
    expect(() => tableRefs('SELECT 1 AS "x"other.default.traces', caller)).toThrowError(/tenant "other"/);
  });

  it("keeps a key bound to one dataset to it: another dataset's three-part name is refused, its own is served", () => {
    const bound = { ...caller, dataset: 'prod', datasetBound: true };
    expect(() => tableRefs('SELECT count(*) FROM acme.default.traces', bound)).toThrowError(/may read only dataset "prod", not "default"/);
    expect(() => tableRefs('SELECT 1 FROM "acme"."DEFAULT"."logs"', bound)).toThrowError(FloeError);
    expect(tableRefs('SELECT count(*) FROM acme.prod.traces', bound).map((r) => r.viewName)).toContain('acme.prod.traces');
    // A key of the whole tenant reads any of its datasets.
    expect(tableRefs('SELECT count(*) FROM acme.prod.traces', caller).map((r) => r.viewName)).toContain('acme.prod.traces');
  });
});
