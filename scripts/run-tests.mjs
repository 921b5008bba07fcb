#!/usr/bin/env node
// Runs the compiled test files (dist/test/**/*.test.js) with node's built-in test runner.
// Usage: node scripts/run-tests.mjs [--unit] [SUBSTRING...]
//   --unit      only tests that need no kernel (everything outside test/kernel, test/e2e, test/diff)
//   SUBSTRING   only test files whose path contains one of these strings
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const testDir = join(root, 'dist', 'test');
const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
const filters = args.filter((a) => !a.startsWith('--'));
const kernelDirs = ['kernel', 'e2e', 'diff', 'reliability'];

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

let files = walk(testDir);
if (unitOnly) files = files.filter((f) => !kernelDirs.includes(relative(testDir, f).split('/')[0]));
if (filters.length) files = files.filter((f) => filters.some((s) => f.includes(s)));
if (files.length === 0) {
  console.error('run-tests: no test files matched');
  process.exit(1);
}
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
