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
});
