import { describe, expect, it } from 'vitest';
import { project } from './projection.ts';

describe('project', () => {
  const record = { id: '7', name: 'Apple Pay', tags: ['payments'], progress: 0 };

  it.each([
    [undefined, record],
    [['name'], { id: '7', name: 'Apple Pay' }],
    [['tags', 'progress'], { id: '7', tags: ['payments'], progress: 0 }],
    [['id'], { id: '7' }],
  ])('keeps %j (and always the id)', (fields, expected) => {
    expect(project(record, fields)).toEqual(expected);
  });
});
