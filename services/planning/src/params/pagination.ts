/**
 * Pagination metadata (spec 3, Limits): pages count from 1; next_page and prev_page are null at
 * the ends; a page past the last is an empty page, not an error.
 */
export interface Pagination {
  current_page: number;
  per_page: number;
  total_pages: number;
  total_records: number;
  next_page: number | null;
  prev_page: number | null;
}

export function paginationOf(page: number, perPage: number, totalRecords: number): Pagination {
  const totalPages = Math.ceil(totalRecords / perPage);
  return {
    current_page: page,
    per_page: perPage,
    total_pages: totalPages,
    total_records: totalRecords,
    next_page: page < totalPages ? page + 1 : null,
    prev_page: page > 1 ? Math.min(page - 1, Math.max(totalPages, 1)) : null,
  };
}

/** LIMIT and OFFSET of a page. */
export function pageWindow(page: number, perPage: number): { limit: number; offset: number } {
  return { limit: perPage, offset: (page - 1) * perPage };
}
