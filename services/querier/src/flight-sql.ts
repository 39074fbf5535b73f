import { Binary, Bool, DenseUnion, Field, Int32, Int64, List, Map_, RecordBatch, Schema, Struct, Table, Uint32, Uint8, Utf8, makeData, vectorFromArray, type Data, type DataType } from 'apache-arrow';
import { FloeError } from '@floe/errors';
import {
  AnySchema,
  FlightSqlClosePreparedStatementSchema,
  FlightSqlCreatePreparedStatementSchema,
  FlightSqlDoPutPreparedStatementResultSchema,
  FlightSqlGetDbSchemasSchema,
  FlightSqlGetSqlInfoSchema,
  FlightSqlGetXdbcTypeInfoSchema,
  FlightSqlGetTablesSchema,
  FlightSqlPreparedStatementQuerySchema,
  FlightSqlPreparedStatementResultSchema,
  FlightSqlStatementQuerySchema,
  FlightSqlTicketStatementQuerySchema,
  anyPack,
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type FlightData,
} from '@floe/proto';
import { flightDataToIpc, ipcSchemaBytes } from '@floe/flight';
import { MAX_HANDLE_BYTES, decodeStatement, encodeStatement, parameterValues, type Statement } from './flight-sql-params.ts';
import { TABLES } from '@floe/schema';

/**
 * Arrow Flight SQL over the querier's Flight service, for SQL clients that speak it (JDBC, ADBC,
 * DBeaver, arrow-flight's FlightSqlServiceClient) rather than Floe's plain SQL tickets. Commands
 * arrive packed in a google.protobuf.Any, in a GetFlightInfo descriptor or a DoGet ticket:
 *
 * - CommandStatementQuery runs the SQL as a plain ticket would (same sandbox, same refusals);
 *   its endpoint's ticket is a TicketStatementQuery whose handle is the SQL text itself, so any
 *   querier can answer the DoGet and nothing is kept between the two calls.
 * - The catalog requests describe Floe's naming, `<tenant>.<dataset>.<table>`: the caller's
 *   tenant is the one catalog, its dataset the one schema, and the tables of a dataset are
 *   Floe's five (an empty or not yet created table reads as empty, so all five are always
 *   listed). Their endpoint's ticket is the command itself: metadata is cheap to make again.
 *
 * - Prepared statements (how most clients run a query) are stateless too: the handle is the SQL,
 *   and once DoPut binds parameter values, the SQL with the values (flight-sql-params.ts).
 *
 * - SqlInfo answers what JDBC and ODBC drivers ask first: the server's name and version, that it
 *   is read-only SQL without transactions, and DuckDB's identifier and null-ordering rules.
 *
 * - The key listings (primary, exported, imported, cross-reference) answer empty: no table has keys.
 *
 * - The XDBC type info lists the DuckDB types Floe's tables and queries produce.
 *
 * Transactions and updates are refused as not implemented. Clients log in with Handshake (Basic `<tenant>:<api key>`) or send
 * `Authorization: Bearer <key>` (the tenant then comes from X-Tenant-ID or the key itself).
 */

const TYPE_PREFIX = 'type.googleapis.com/arrow.flight.protocol.sql.';

export type FlightSqlCommand =
  | { kind: 'statement'; statement: Statement }
  | { kind: 'prepared'; statement: Statement }
  | { kind: 'statement_ticket'; statement: Statement }
  | { kind: 'catalogs' }
  | { kind: 'db_schemas'; catalog?: string; schemaPattern?: string }
  | { kind: 'tables'; catalog?: string; schemaPattern?: string; tablePattern?: string; tableTypes: string[]; includeSchema: boolean }
  | { kind: 'table_types' }
  | { kind: 'sql_info'; info: number[] }
  | { kind: 'type_info'; dataType?: number }
  | { kind: 'primary_keys' }
  | { kind: 'foreign_keys' };

/** The only table type Floe has. */
const TABLE_TYPE = 'TABLE';

const unpack = <D extends DescMessage>(schema: D, value: Uint8Array) => {
  try {
    return fromBinary(schema, value);
  } catch {
    throw new FloeError('bad_data', `Flight SQL ${schema.name} does not decode`);
  }
};

/** The Flight SQL Any in a descriptor's or ticket's bytes, if they hold one (Floe's own SQL text or JSON tickets never do). */
function flightSqlAny(bytes: Uint8Array): { name: string; value: Uint8Array } | undefined {
  // An Any starts with its type_url (field 1, length-delimited): tag byte 0x0a.
  if (bytes.length === 0 || bytes[0] !== 0x0a) return undefined;
  try {
    const { typeUrl, value } = fromBinary(AnySchema, bytes);
    return typeUrl.startsWith(TYPE_PREFIX) ? { name: typeUrl.slice(TYPE_PREFIX.length), value } : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the bytes are a Flight SQL command or ticket (decided before authenticating, which it steers). */
export const isFlightSql = (bytes: Uint8Array): boolean => flightSqlAny(bytes) !== undefined;

/**
 * A statement's SQL as a client sent it, at most a ticket's size: its handle and ticket carry it
 * back, and a longer one would be refused only then (after planning it), or not at all by a
 * GetSchema.
 */
function statementSql(query: string): string {
  if (Buffer.byteLength(query, 'utf8') > MAX_HANDLE_BYTES) throw new FloeError('too_large', `a statement may be at most ${MAX_HANDLE_BYTES} bytes of SQL`);
  return query;
}

/** A statement run inside a transaction is refused: Floe is read-only and has none. */
function outsideTransaction(transactionId: Uint8Array | undefined): void {
  if (transactionId !== undefined) throw new FloeError('not_implemented', 'Flight SQL transactions are not supported: Floe is read-only');
}

/** The Flight SQL command in a descriptor's or ticket's bytes; undefined for anything else. */
export function flightSqlCommand(bytes: Uint8Array): FlightSqlCommand | undefined {
  const any = flightSqlAny(bytes);
  if (!any) return undefined;
  const { name, value } = any;
  switch (name) {
    case 'CommandStatementQuery': {
      const q = unpack(FlightSqlStatementQuerySchema, value);
      outsideTransaction(q.transactionId);
      return { kind: 'statement', statement: { sql: statementSql(q.query) } };
    }
    case 'CommandPreparedStatementQuery':
      return { kind: 'prepared', statement: decodeStatement(unpack(FlightSqlPreparedStatementQuerySchema, value).preparedStatementHandle) };
    case 'TicketStatementQuery':
      return { kind: 'statement_ticket', statement: decodeStatement(unpack(FlightSqlTicketStatementQuerySchema, value).statementHandle) };
    case 'CommandGetCatalogs':
      return { kind: 'catalogs' };
    case 'CommandGetDbSchemas': {
      const c = unpack(FlightSqlGetDbSchemasSchema, value);
      return { kind: 'db_schemas', catalog: c.catalog, schemaPattern: c.dbSchemaFilterPattern };
    }
    case 'CommandGetTables': {
      const c = unpack(FlightSqlGetTablesSchema, value);
      return { kind: 'tables', catalog: c.catalog, schemaPattern: c.dbSchemaFilterPattern, tablePattern: c.tableNameFilterPattern, tableTypes: c.tableTypes, includeSchema: c.includeSchema };
    }
    case 'CommandGetTableTypes':
      return { kind: 'table_types' };
    case 'CommandGetSqlInfo':
      return { kind: 'sql_info', info: unpack(FlightSqlGetSqlInfoSchema, value).info };
    case 'CommandGetXdbcTypeInfo':
      return { kind: 'type_info', dataType: unpack(FlightSqlGetXdbcTypeInfoSchema, value).dataType };
    // Floe's tables have no keys: whatever table these name, the answer is empty (JDBC's
    // DatabaseMetaData asks them of every table a tool shows).
    case 'CommandGetPrimaryKeys':
      return { kind: 'primary_keys' };
    case 'CommandGetExportedKeys':
    case 'CommandGetImportedKeys':
    case 'CommandGetCrossReference':
      return { kind: 'foreign_keys' };
    default:
      throw new FloeError('not_implemented', `Flight SQL ${name} is not supported: Floe answers statement queries and the catalog, schema, table and table type listings`);
  }
}

/** The ticket of a statement query's endpoint: a TicketStatementQuery carrying the statement (SQL and bound values). */
export function statementTicket(statement: Statement): Uint8Array {
  return toBinary(AnySchema, anyPack(FlightSqlTicketStatementQuerySchema, create(FlightSqlTicketStatementQuerySchema, { statementHandle: encodeStatement(statement) })));
}

/**
 * DoPut of Flight SQL: binding parameter values to a prepared statement (one row, whose columns
 * are `$1`, `$2`, …). The answer is the handle to execute from then on, carrying the statement
 * and its values (flight-sql-params.ts). Updates and ingestion are not implemented: Floe's SQL is
 * read-only and data comes in through the acceptor.
 */
export function bindParameters(cmd: Uint8Array, messages: FlightData[]): Uint8Array[] {
  const any = flightSqlAny(cmd);
  if (!any) throw new FloeError('not_implemented', 'DoPut takes only Flight SQL parameter bindings (CommandPreparedStatementQuery)');
  if (any.name !== 'CommandPreparedStatementQuery') {
    throw new FloeError('not_implemented', `Flight SQL ${any.name} is not supported: Floe is read-only, and DoPut only binds a prepared statement's parameters`);
  }
  const { sql } = decodeStatement(unpack(FlightSqlPreparedStatementQuerySchema, any.value).preparedStatementHandle);
  let ipc: Uint8Array;
  try {
    ipc = Buffer.concat(flightDataToIpc(messages));
  } catch (err) {
    throw new FloeError('bad_data', `the parameter stream does not decode: ${(err as Error).message}`);
  }
  // Checked now, so a bad value is refused here rather than when the statement runs.
  parameterValues(ipc);
  const handle = encodeStatement({ sql, paramsIpc: ipc });
  return [toBinary(FlightSqlDoPutPreparedStatementResultSchema, create(FlightSqlDoPutPreparedStatementResultSchema, { preparedStatementHandle: handle }))];
}

/** Flight SQL's prepared-statement actions (DoAction types). */
export const CREATE_PREPARED_STATEMENT = 'CreatePreparedStatement';
export const CLOSE_PREPARED_STATEMENT = 'ClosePreparedStatement';

/**
 * A DoAction of Flight SQL: CreatePreparedStatement answers a handle that is the SQL itself, with
 * the statement's result and parameter schemas as `describe` plans them (JDBC drivers bind
 * parameters by the parameter schema); closing one has nothing to free. Other actions are not
 * implemented.
 */
export async function preparedStatementAction(type: string, body: Uint8Array, describe: (sql: string) => Promise<{ columns: Schema; parameters: Schema }>): Promise<Uint8Array[]> {
  const request = unpack(AnySchema, body);
  switch (type) {
    case CREATE_PREPARED_STATEMENT: {
      const q = unpack(FlightSqlCreatePreparedStatementSchema, request.value);
      outsideTransaction(q.transactionId);
      const { columns, parameters } = await describe(statementSql(q.query));
      const result = create(FlightSqlPreparedStatementResultSchema, {
        preparedStatementHandle: encodeStatement({ sql: q.query }),
        datasetSchema: ipcSchemaBytes(columns),
        parameterSchema: ipcSchemaBytes(parameters),
      });
      return [toBinary(AnySchema, anyPack(FlightSqlPreparedStatementResultSchema, result))];
    }
    case CLOSE_PREPARED_STATEMENT:
      unpack(FlightSqlClosePreparedStatementSchema, request.value);
      return [];
    default:
      throw new FloeError('not_implemented', `the action ${JSON.stringify(type.slice(0, 64))} is not supported: Floe answers ${CREATE_PREPARED_STATEMENT} and ${CLOSE_PREPARED_STATEMENT}`);
  }
}

/** Longest filter pattern taken: patterns name schemas and tables, never long text. */
const MAX_PATTERN = 256;

/**
 * A Flight SQL filter pattern (`%` any run, `_` any one character) as a whole-string test. Matched
 * by the linear two-pointer wildcard walk, not a RegExp: `.*` runs backtrack exponentially on a
 * pattern of many `%`, which any caller could send.
 */
export function likePattern(pattern: string | undefined): (value: string) => boolean {
  if (pattern === undefined) return () => true;
  if (pattern.length > MAX_PATTERN) throw new FloeError('bad_data', `a filter pattern may be at most ${MAX_PATTERN} characters`);
  const p = [...pattern];
  return (text) => {
    const v = [...text];
    let i = 0;
    let j = 0;
    let star = -1;
    let resume = 0;
    while (i < v.length) {
      if (j < p.length && (p[j] === '_' || p[j] === v[i])) {
        i++;
        j++;
      } else if (j < p.length && p[j] === '%') {
        star = j++;
        resume = i;
      } else if (star >= 0) {
        j = star + 1;
        i = ++resume;
      } else return false;
    }
    while (j < p.length && p[j] === '%') j++;
    return j === p.length;
  };
}

/** The Arrow data of one column (an empty column has no chunk of its own). */
function columnData(values: unknown[], type: DataType): Data {
  return vectorFromArray(values, type).data[0] ?? makeData({ type: type as Utf8, length: 0, nullCount: 0 });
}

/** A table of the given fields from whole columns (not-null fields as Flight SQL declares them). */
function tableOf(fields: Field[], columns: unknown[][]): Table {
  const length = columns[0]?.length ?? 0;
  const children = fields.map((f, i) => columnData(columns[i]!, f.type as DataType));
  const schema = new Schema(fields);
  return new Table([new RecordBatch(schema, makeData({ type: new Struct(fields), length, nullCount: 0, children }))]);
}

const utf8 = (name: string, nullable: boolean) => new Field(name, new Utf8(), nullable);

export interface MetadataScope {
  tenant: string;
  dataset: string;
  /** The querier's version (FLIGHT_SQL_SERVER_VERSION). */
  version: string;
  /** The Arrow schema of one of the caller's tables, as a query over it answers (include_schema). */
  tableSchema(table: string): Promise<Uint8Array>;
}

/** The answer to a catalog metadata command, for the caller's tenant and dataset only. */
export async function metadataTable(cmd: Exclude<FlightSqlCommand, { kind: 'statement' | 'prepared' | 'statement_ticket' }>, scope: MetadataScope): Promise<Table> {
  const inCatalog = (catalog: string | undefined) => catalog === undefined || catalog === scope.tenant;
  switch (cmd.kind) {
    case 'catalogs':
      return tableOf([utf8('catalog_name', false)], [[scope.tenant]]);
    case 'table_types':
      return tableOf([utf8('table_type', false)], [[TABLE_TYPE]]);
    case 'db_schemas': {
      const shown = inCatalog(cmd.catalog) && likePattern(cmd.schemaPattern)(scope.dataset);
      return tableOf([utf8('catalog_name', true), utf8('db_schema_name', false)], [shown ? [scope.tenant] : [], shown ? [scope.dataset] : []]);
    }
    case 'sql_info':
      return sqlInfoTable(cmd.info, scope.version);
    case 'type_info':
      return typeInfoTable(cmd.dataType);
    case 'primary_keys':
      return tableOf(
        [utf8('catalog_name', true), utf8('db_schema_name', true), utf8('table_name', false), utf8('column_name', false), utf8('key_name', true), new Field('key_sequence', new Int32(), false)],
        [[], [], [], [], [], []],
      );
    case 'foreign_keys': {
      const side = (p: 'pk' | 'fk') => [utf8(`${p}_catalog_name`, true), utf8(`${p}_db_schema_name`, true), utf8(`${p}_table_name`, false), utf8(`${p}_column_name`, false)];
      const fields = [...side('pk'), ...side('fk'), new Field('key_sequence', new Int32(), false), utf8('fk_key_name', true), utf8('pk_key_name', true), new Field('update_rule', new Uint8(), false), new Field('delete_rule', new Uint8(), false)];
      return tableOf(fields, fields.map(() => []));
    }
    case 'tables': {
      const typeOk = cmd.tableTypes.length === 0 || cmd.tableTypes.includes(TABLE_TYPE);
      const schemaOk = inCatalog(cmd.catalog) && likePattern(cmd.schemaPattern)(scope.dataset);
      const matches = likePattern(cmd.tablePattern);
      const names = typeOk && schemaOk ? Object.keys(TABLES).filter(matches).sort() : [];
      const fields: Field[] = [utf8('catalog_name', true), utf8('db_schema_name', true), utf8('table_name', false), utf8('table_type', false)];
      const columns: unknown[][] = [names.map(() => scope.tenant), names.map(() => scope.dataset), names, names.map(() => TABLE_TYPE)];
      if (cmd.includeSchema) {
        fields.push(new Field('table_schema', new Binary(), false));
        columns.push(await Promise.all(names.map((n) => scope.tableSchema(n))));
      }
      return tableOf(fields, columns);
    }
  }
}

// SqlInfo ids (FlightSql.proto's SqlInfo enum) and the union members their values use.
const SQL_INFO_VALUE = new DenseUnion(
  [0, 1, 2, 3, 4, 5],
  [
    new Field('string_value', new Utf8(), true),
    new Field('bool_value', new Bool(), true),
    new Field('bigint_value', new Int64(), true),
    new Field('int32_bitmask', new Int32(), true),
    new Field('string_list', new List(new Field('string_data', new Utf8(), true)), true),
    new Field(
      'int32_to_int32_list_map',
      new Map_(new Field('entries', new Struct<{ key: Int32; value: List<Int32> }>([new Field('key', new Int32(), false), new Field('value', new List(new Field('$data$', new Int32(), true)), true)] as never), false)),
      true,
    ),
  ],
);
type InfoValue = { string: string } | { bool: boolean } | { int32: number };

/**
 * What Floe says of itself. Case sensitivity 1 is CASE_INSENSITIVE (DuckDB folds unquoted and
 * quoted identifiers alike); null ordering 3 is NULLS AT END (DuckDB's default); transactions 0 is NONE.
 */
function sqlInfoValues(version: string): Map<number, InfoValue> {
  return new Map<number, InfoValue>([
    [0, { string: 'Floe' }], // FLIGHT_SQL_SERVER_NAME
    [1, { string: version }], // FLIGHT_SQL_SERVER_VERSION
    [3, { bool: true }], // FLIGHT_SQL_SERVER_READ_ONLY
    [4, { bool: true }], // FLIGHT_SQL_SERVER_SQL
    [5, { bool: false }], // FLIGHT_SQL_SERVER_SUBSTRAIT
    [8, { int32: 0 }], // FLIGHT_SQL_SERVER_TRANSACTION
    [9, { bool: false }], // FLIGHT_SQL_SERVER_CANCEL
    [500, { bool: false }], // SQL_DDL_CATALOG
    [501, { bool: false }], // SQL_DDL_SCHEMA
    [502, { bool: false }], // SQL_DDL_TABLE
    [503, { int32: 1 }], // SQL_IDENTIFIER_CASE
    [504, { string: '"' }], // SQL_IDENTIFIER_QUOTE_CHAR
    [505, { int32: 1 }], // SQL_QUOTED_IDENTIFIER_CASE
    [506, { bool: true }], // SQL_ALL_TABLES_ARE_SELECTABLE
    [507, { int32: 3 }], // SQL_NULL_ORDERING
    [529, { string: 'dataset' }], // SQL_SCHEMA_TERM
    [531, { string: 'tenant' }], // SQL_CATALOG_TERM
    [532, { bool: true }], // SQL_CATALOG_AT_START
  ]);
}

/** The SqlInfo rows asked for (all known ones when none is named; unknown ids are left out). */
export function sqlInfoTable(info: readonly number[], version: string): Table {
  const known = sqlInfoValues(version);
  const ids = (info.length === 0 ? [...known.keys()] : [...new Set(info)].filter((id) => known.has(id))).sort((a, b) => a - b);
  const strings: string[] = [];
  const bools: boolean[] = [];
  const ints: number[] = [];
  const typeIds = new Int8Array(ids.length);
  const offsets = new Int32Array(ids.length);
  ids.forEach((id, i) => {
    const v = known.get(id)!;
    if ('string' in v) [typeIds[i], offsets[i]] = [0, strings.push(v.string) - 1];
    else if ('bool' in v) [typeIds[i], offsets[i]] = [1, bools.push(v.bool) - 1];
    else [typeIds[i], offsets[i]] = [3, ints.push(v.int32) - 1];
  });
  const member = (i: number, values: unknown[]) => columnData(values, SQL_INFO_VALUE.children[i]!.type as DataType);
  const value = makeData({
    type: SQL_INFO_VALUE,
    length: ids.length,
    nullCount: 0,
    typeIds,
    valueOffsets: offsets,
    children: [member(0, strings), member(1, bools), member(2, []), member(3, ints), member(4, []), member(5, [])],
  });
  const name = columnData(ids, new Uint32());
  const fields = [new Field('info_name', new Uint32(), false), new Field('value', SQL_INFO_VALUE, false)];
  return new Table([new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length: ids.length, nullCount: 0, children: [name, value] }))]);
}

/**
 * The SQL types a result can hold, as JDBC's getTypeInfo lists them: DuckDB's names with their
 * XDBC type (FlightSql.proto's XdbcDataType, JDBC's values), precision and literal quoting.
 */
const XDBC_TYPES: ReadonlyArray<{ name: string; type: number; size: number | null; quote?: string; radix?: number; fixed?: boolean; caseSensitive?: boolean; scale?: [number, number] }> = [
  { name: 'VARCHAR', type: 12, size: null, quote: "'", caseSensitive: true },
  { name: 'BLOB', type: -3, size: null, quote: "'" },
  { name: 'BIGINT', type: -5, size: 19, radix: 10, scale: [0, 0] },
  { name: 'TINYINT', type: -6, size: 3, radix: 10, scale: [0, 0] },
  { name: 'BOOLEAN', type: -7, size: 1 },
  { name: 'DECIMAL', type: 3, size: 38, radix: 10, fixed: true, scale: [0, 38] },
  { name: 'INTEGER', type: 4, size: 10, radix: 10, scale: [0, 0] },
  { name: 'SMALLINT', type: 5, size: 5, radix: 10, scale: [0, 0] },
  { name: 'FLOAT', type: 7, size: 24, radix: 2 },
  { name: 'DOUBLE', type: 8, size: 53, radix: 2 },
  { name: 'DATE', type: 91, size: 10, quote: "'" },
  { name: 'TIME', type: 92, size: 15, quote: "'" },
  { name: 'TIMESTAMP', type: 93, size: 26, quote: "'" },
];

/** JDBC's getTypeInfo answer, ordered by data type then name; `dataType` keeps one XDBC type. */
export function typeInfoTable(dataType: number | undefined): Table {
  const rows = XDBC_TYPES.filter((t) => dataType === undefined || t.type === dataType).sort((a, b) => a.type - b.type || (a.name < b.name ? -1 : 1));
  const int32 = (name: string, nullable: boolean) => new Field(name, new Int32(), nullable);
  const bool = (name: string, nullable: boolean) => new Field(name, new Bool(), nullable);
  // Datetime types carry their subcode; the SQL data type of datetimes is the generic DATETIME (9).
  const subcode: Record<number, number> = { 91: 1, 92: 2, 93: 3 };
  const fields = [
    utf8('type_name', false),
    int32('data_type', false),
    int32('column_size', true),
    utf8('literal_prefix', true),
    utf8('literal_suffix', true),
    new Field('create_params', new List(new Field('item', new Utf8(), false)), true),
    int32('nullable', false),
    bool('case_sensitive', false),
    int32('searchable', false),
    bool('unsigned_attribute', true),
    bool('fixed_prec_scale', false),
    bool('auto_increment', true),
    utf8('local_type_name', true),
    int32('minimum_scale', true),
    int32('maximum_scale', true),
    int32('sql_data_type', false),
    int32('datetime_subcode', true),
    int32('num_prec_radix', true),
    int32('interval_precision', true),
  ];
  const numeric = (t: (typeof rows)[number]) => t.radix !== undefined;
  const columns: unknown[][] = [
    rows.map((t) => t.name),
    rows.map((t) => t.type),
    rows.map((t) => t.size),
    rows.map((t) => t.quote ?? null),
    rows.map((t) => t.quote ?? null),
    rows.map(() => null),
    rows.map(() => 1), // NULLABILITY_NULLABLE
    rows.map((t) => t.caseSensitive ?? false),
    rows.map((t) => (t.type === 12 ? 3 : 2)), // SEARCHABLE_FULL for text (LIKE too), else BASIC
    rows.map((t) => (numeric(t) ? false : null)),
    rows.map((t) => t.fixed ?? false),
    rows.map((t) => (numeric(t) ? false : null)),
    rows.map((t) => t.name),
    rows.map((t) => t.scale?.[0] ?? null),
    rows.map((t) => t.scale?.[1] ?? null),
    rows.map((t) => (subcode[t.type] !== undefined ? 9 : t.type)),
    rows.map((t) => subcode[t.type] ?? null),
    rows.map((t) => t.radix ?? null),
    rows.map(() => null),
  ];
  return tableOf(fields, columns);
}
