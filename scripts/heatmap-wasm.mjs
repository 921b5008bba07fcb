#!/usr/bin/env node
// Writes src/flame/heatmap-wasm.ts: the heat map's WebAssembly modules (the parser, plainScanModule() of
// src/flame/heatmap-scan.ts, and the cell writer, plainCellsModule() of src/flame/heatmap-cells.ts, from the build
// in dist/) as base64 constants, so that a run does not build them from their instructions (~8-13 ms of cold
// JavaScript per run on the bench VM for the parser). test/flame/heatmap.test.ts checks that the constants equal
// the modules; run this after changing the instructions:
//   npm run build && node scripts/heatmap-wasm.mjs && npm run build
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { plainScanModule } = await import(join(root, 'dist', 'src', 'flame', 'heatmap-scan.js'));
const { plainCellsModule } = await import(join(root, 'dist', 'src', 'flame', 'heatmap-cells.js'));

/** `export const NAME =` the module's bytes as base64, 100 characters a line. */
function constant(name, bytes) {
  const lines = Buffer.from(bytes)
    .toString('base64')
    .match(/.{1,100}/g)
    .map((l) => `  '${l}' +`);
  lines[lines.length - 1] = lines[lines.length - 1].slice(0, -2) + ';';
  return `export const ${name} =\n${lines.join('\n')}\n`;
}

writeFileSync(
  join(root, 'src', 'flame', 'heatmap-wasm.ts'),
  `/**
 * The heat map's WebAssembly modules as base64 (made by scripts/heatmap-wasm.mjs; test/flame/heatmap.test.ts checks
 * they are the same bytes): the parser, plainScanModule() of heatmap-scan.ts, and the cell writer,
 * plainCellsModule() of heatmap-cells.ts. Do not edit: change the instructions there and run the script.
 */
${constant('PLAIN_SCAN_WASM', plainScanModule())}
${constant('PLAIN_CELLS_WASM', plainCellsModule())}`,
);
