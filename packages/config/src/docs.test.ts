import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderConfigDocs } from './docs.ts';

describe('docs/config.md', () => {
  it('matches the schema (regenerate: node packages/config/scripts/render-docs.ts)', () => {
    const committed = readFileSync(join(import.meta.dirname, '../../../docs/config.md'), 'utf8');
    expect(committed).toBe(renderConfigDocs());
  });

  it('documents every key with its environment variable', () => {
    const doc = renderConfigDocs();
    expect(doc).toContain('| `writer.flush_interval` | duration | `2s` | `FLOE__WRITER__FLUSH_INTERVAL` |');
    expect(doc).toContain('`FLOE__STORAGE__S3__BUCKET`');
    expect(doc.split('\n').filter((l) => l.startsWith('| `') && l.endsWith('|  |'))).toEqual([]);
  });
});
