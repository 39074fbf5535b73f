/**
 * Schema metadata of a query result the querier cut at querier.max_result_rows, with the limit as
 * its value. A Flight client sees it in the stream's schema (pyarrow's `schema.metadata`) and
 * `floe sql` warns, so a cut result does not pass for the whole answer.
 */
export const TRUNCATED_AT_ROWS = 'floe.truncated_at_rows';
