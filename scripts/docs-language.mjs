#!/usr/bin/env node
// Regenerate docs/language.md's "Builtins" and "Functions" tables from the builtin registry (src/lang/builtins/).
// Run after `npm run build` (`npm run docs:language` does both); `--check` exits 1 when the file is out of date.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { withBuiltinDocSections } = await import(join(root, 'dist/src/lang/builtins/doc.js'));
const file = join(root, 'docs/language.md');
const old = readFileSync(file, 'utf8');
const next = withBuiltinDocSections(old);
if (process.argv.includes('--check')) {
  if (old !== next) {
    console.error('docs/language.md: the builtin tables are out of date; run npm run docs:language');
    process.exit(1);
  }
} else if (old !== next) {
  writeFileSync(file, next);
  console.log('docs/language.md: builtin tables regenerated');
}
