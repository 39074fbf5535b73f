import { describe, expect, it } from 'vitest';
import { pageWindow, paginationOf } from './pagination.ts';

describe('paginationOf', () => {
  it.each([
    [1, 30, 0, { current_page: 1, per_page: 30, total_pages: 0, total_records: 0, next_page: null, prev_page: null }],
    [1, 2, 5, { current_page: 1, per_page: 2, total_pages: 3, total_records: 5, next_page: 2, prev_page: null }],
    [2, 2, 5, { current_page: 2, per_page: 2, total_pages: 3, total_records: 5, next_page: 3, prev_page: 1 }],
    [3, 2, 5, { current_page: 3, per_page: 2, total_pages: 3, total_records: 5, next_page: null, prev_page: 2 }],
    [2, 2, 4, { current_page: 2, per_page: 2, total_pages: 2, total_records: 4, next_page: null, prev_page: 1 }],
    // Past the end: an empty page whose prev_page leads back to the last real one.
    [9, 2, 5, { current_page: 9, per_page: 2, total_pages: 3, total_records: 5, next_page: null, prev_page: 3 }],
    [4, 10, 0, { current_page: 4, per_page: 10, total_pages: 0, total_records: 0, next_page: null, prev_page: 1 }],
  ])('page %i of %i per page over %i records', (page, perPage, total, expected) => {
    expect(paginationOf(page, perPage, total)).toEqual(expected);
  });
});

describe('pageWindow', () => {
  it.each([
    [1, 30, { limit: 30, offset: 0 }],
    [3, 20, { limit: 20, offset: 40 }],
  ])('page %i of %i', (page, perPage, expected) => {
    expect(pageWindow(page, perPage)).toEqual(expected);
  });
});
