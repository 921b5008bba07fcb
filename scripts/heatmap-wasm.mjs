#!/usr/bin/env node
// Writes src/flame/heatmap-wasm.ts: the heat map parser's WebAssembly module (plainScanModule() of
// src/flame/heatmap-scan.ts, from the build in dist/) as a base64 constant, so that a run does not build the module
// from its instructions (~8-13 ms of cold JavaScript per run on the bench VM). test/flame/heatmap.test.ts checks
// that the constant equals plainScanModule(); run this after changing the instructions:
//   npm run build && node scripts/heatmap-wasm.mjs && npm run build
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { plainScanModule } = await import(join(root, 'dist', 'src', 'flame', 'heatmap-scan.js'));
const b64 = Buffer.from(plainScanModule()).toString('base64');
const lines = b64.match(/.{1,100}/g).map((l) => `  '${l}' +`);
lines[lines.length - 1] = lines[lines.length - 1].slice(0, -2) + ';';
writeFileSync(
  join(root, 'src', 'flame', 'heatmap-wasm.ts'),
  `/**
 * The heat map parser's WebAssembly module, plainScanModule() of heatmap-scan.ts, as base64 (made by
 * scripts/heatmap-wasm.mjs; test/flame/heatmap.test.ts checks it is the same bytes). Do not edit: change the
 * instructions in heatmap-scan.ts and run the script.
 */
export const PLAIN_SCAN_WASM =
${lines.join('\n')}
`,
);
