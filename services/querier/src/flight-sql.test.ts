import { describe, expect, it } from 'vitest';
import { AnySchema, FlightSqlCreatePreparedStatementSchema, FlightSqlPreparedStatementQuerySchema, FlightSqlPreparedStatementResultSchema, FlightSqlStatementQuerySchema, anyPack, anyUnpack, create, fromBinary, toBinary } from '@floe/proto';
import { Field, Int32, Schema, UnionMode, Utf8, tableFromIPC, tableToIPC } from 'apache-arrow';
import { ipcSchemaBytes } from '@floe/flight';
import { flightSqlCommand, likePattern, metadataTable, preparedStatementAction, sqlInfoTable, statementTicket, typeInfoTable } from './flight-sql.ts';

const noDescribe = async (): Promise<never> => {
  throw new Error('not described');
};

describe('flightSqlCommand', () => {
  it('leaves Floe’s own tickets alone: SQL text (even after a newline) and JSON', () => {
    for (const text of ['SELECT 1', '\nSELECT 1', '{"sql":"SELECT 1"}', '']) expect(flightSqlCommand(Buffer.from(text))).toBeUndefined();
  });

  it('reads a packed statement, its ticket and a prepared statement handle (the SQL itself)', async () => {
    const packed = toBinary(AnySchema, anyPack(FlightSqlStatementQuerySchema, create(FlightSqlStatementQuerySchema, { query: 'SELECT 2' })));
    expect(flightSqlCommand(packed)).toEqual({ kind: 'statement', statement: { sql: 'SELECT 2' } });
    expect(flightSqlCommand(statementTicket({ sql: 'SELECT 3' }))).toEqual({ kind: 'statement_ticket', statement: { sql: 'SELECT 3' } });
    const request = create(FlightSqlCreatePreparedStatementSchema, { query: 'SELECT 4' });
    const described = { columns: new Schema([new Field('x', new Int32(), true)]), parameters: new Schema([new Field('1', new Utf8(), true)]) };
    const [created] = await preparedStatementAction('CreatePreparedStatement', toBinary(AnySchema, anyPack(FlightSqlCreatePreparedStatementSchema, request)), async (sql) => {
      expect(sql).toBe('SELECT 4');
      return described;
    });
    const result = anyUnpack(fromBinary(AnySchema, created!), FlightSqlPreparedStatementResultSchema)!;
    expect(Buffer.from(result.preparedStatementHandle).toString()).toBe('SELECT 4');
    expect(Buffer.from(result.datasetSchema).equals(Buffer.from(ipcSchemaBytes(described.columns)))).toBe(true);
    expect(Buffer.from(result.parameterSchema).equals(Buffer.from(ipcSchemaBytes(described.parameters)))).toBe(true);
    const execute = create(FlightSqlPreparedStatementQuerySchema, { preparedStatementHandle: result.preparedStatementHandle });
    expect(flightSqlCommand(toBinary(AnySchema, anyPack(FlightSqlPreparedStatementQuerySchema, execute)))).toEqual({ kind: 'prepared', statement: { sql: 'SELECT 4' } });
    expect(await preparedStatementAction('ClosePreparedStatement', toBinary(AnySchema, anyPack(FlightSqlPreparedStatementQuerySchema, execute)), noDescribe)).toEqual([]);
  });

  it('refuses commands it does not serve as not implemented, and transactions', async () => {
    const other = toBinary(AnySchema, create(AnySchema, { typeUrl: 'type.googleapis.com/arrow.flight.protocol.sql.CommandStatementUpdate', value: new Uint8Array() }));
    expect(() => flightSqlCommand(other)).toThrow(expect.objectContaining({ kind: 'not_implemented' }));
    const inTx = toBinary(AnySchema, anyPack(FlightSqlStatementQuerySchema, create(FlightSqlStatementQuerySchema, { query: 'SELECT 1', transactionId: new Uint8Array([1]) })));
    expect(() => flightSqlCommand(inTx)).toThrow(/transactions/);
    await expect(preparedStatementAction('BeginTransaction', new Uint8Array(), noDescribe)).rejects.toThrow(expect.objectContaining({ kind: 'not_implemented' }));
  });
});

describe('statement size', () => {
  it('refuses a statement longer than a ticket may be, before anything plans it', async () => {
    const query = `SELECT '${'x'.repeat(256 * 1024)}'`;
    const packed = toBinary(AnySchema, anyPack(FlightSqlStatementQuerySchema, create(FlightSqlStatementQuerySchema, { query })));
    expect(() => flightSqlCommand(packed)).toThrow(expect.objectContaining({ kind: 'too_large', message: 'a statement may be at most 262144 bytes of SQL' }));
    const prepare = toBinary(AnySchema, anyPack(FlightSqlCreatePreparedStatementSchema, create(FlightSqlCreatePreparedStatementSchema, { query })));
    await expect(preparedStatementAction('CreatePreparedStatement', prepare, noDescribe)).rejects.toMatchObject({ kind: 'too_large' });
  });
});

describe('likePattern', () => {
  it('matches % and _ as SQL LIKE does, everything else literally, the whole string', () => {
    expect(['traces', 'metrics', 'metric_exemplars'].filter(likePattern('%s'))).toEqual(['traces', 'metrics', 'metric_exemplars']);
    expect(['traces', 'metrics', 'metric_exemplars'].filter(likePattern('metric_'))).toEqual(['metrics']);
    expect(['a.c', 'abc'].filter(likePattern('a.c'))).toEqual(['a.c']);
    expect(['default'].filter(likePattern(undefined))).toEqual(['default']);
    expect(['x(y'].filter(likePattern('x(%'))).toEqual(['x(y']);
    expect(['', 'a'].filter(likePattern('%'))).toEqual(['', 'a']);
    expect(['ab', 'b'].filter(likePattern('_b'))).toEqual(['ab']);
  });

  it('answers a pattern of many % without backtracking (a RegExp would take minutes), and refuses a very long one', () => {
    const many = `${'%'.repeat(200)}Z`;
    expect(likePattern(many)('metric_exemplars'.repeat(10))).toBe(false);
    expect(likePattern(`${'%a'.repeat(100)}`)('a'.repeat(100))).toBe(true);
    expect(() => likePattern('%'.repeat(300))).toThrow(/at most 256/);
  });
});

describe('sqlInfoTable', () => {
  it('answers the asked ids in a dense union that survives an IPC round trip', () => {
    const table = tableFromIPC(tableToIPC(sqlInfoTable([504, 0, 3, 507, 99999], '1.2.3')));
    expect(table.schema.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual([
      ['info_name', 'Uint32', false],
      ['value', 'Union<Utf8 | Bool | Int64 | Int32 | List<Utf8> | Map<{key:Int32, value:List<Int32>}>>', false],
    ]);
    expect((table.schema.fields[1]!.type as { mode: number }).mode).toBe(UnionMode.Dense);
    expect(table.toArray().map((r) => [r.info_name, r.value])).toEqual([
      [0, 'Floe'],
      [3, true],
      [504, '"'],
      [507, 3],
    ]);
    const all = sqlInfoTable([], '1.2.3');
    expect(all.numRows).toBeGreaterThan(10);
    expect(all.toArray().find((r) => r.info_name === 1)?.value).toBe('1.2.3');
  });
});

describe('key listings', () => {
  it('answer empty tables in Flight SQL\'s schemas: no Floe table has keys', async () => {
    const packed = (name: string) => toBinary(AnySchema, create(AnySchema, { typeUrl: `type.googleapis.com/arrow.flight.protocol.sql.${name}`, value: new Uint8Array() }));
    const scope = { tenant: 't', dataset: 'd', version: '0', tableSchema: async () => new Uint8Array() };
    const primary = flightSqlCommand(packed('CommandGetPrimaryKeys'))!;
    const pk = await metadataTable(primary as Exclude<typeof primary, { kind: 'statement' | 'prepared' | 'statement_ticket' }>, scope);
    expect([pk.numRows, pk.schema.fields.map((f) => f.name)]).toEqual([0, ['catalog_name', 'db_schema_name', 'table_name', 'column_name', 'key_name', 'key_sequence']]);
    for (const name of ['CommandGetExportedKeys', 'CommandGetImportedKeys', 'CommandGetCrossReference']) {
      const cmd = flightSqlCommand(packed(name))!;
      const fk = tableFromIPC(tableToIPC(await metadataTable(cmd as Exclude<typeof cmd, { kind: 'statement' | 'prepared' | 'statement_ticket' }>, scope)));
      expect(fk.numRows).toBe(0);
      expect(fk.schema.fields.map((f) => f.name)).toEqual(['pk_catalog_name', 'pk_db_schema_name', 'pk_table_name', 'pk_column_name', 'fk_catalog_name', 'fk_db_schema_name', 'fk_table_name', 'fk_column_name', 'key_sequence', 'fk_key_name', 'pk_key_name', 'update_rule', 'delete_rule']);
    }
  });
});

describe('typeInfoTable', () => {
  it('lists DuckDB types by XDBC type, with one type when asked, and survives an IPC round trip', () => {
    const all = tableFromIPC(tableToIPC(typeInfoTable(undefined)));
    const types = all.toArray().map((r) => [r.type_name, r.data_type]);
    expect(types).toEqual([...types].sort((a, b) => (a[1] as number) - (b[1] as number)));
    expect(types).toContainEqual(['VARCHAR', 12]);
    expect(types).toContainEqual(['BIGINT', -5]);
    const ts = all.toArray().find((r) => r.type_name === 'TIMESTAMP')!;
    expect([ts.sql_data_type, ts.datetime_subcode, ts.literal_prefix]).toEqual([9, 3, "'"]);
    expect(typeInfoTable(8).toArray().map((r) => r.type_name)).toEqual(['DOUBLE']);
    expect(all.schema.fields.length).toBe(19);
  });
});
