// Writes docs/config.md from the config schema.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderConfigDocs } from '../src/docs.ts';

writeFileSync(join(import.meta.dirname, '../../../docs/config.md'), renderConfigDocs());
