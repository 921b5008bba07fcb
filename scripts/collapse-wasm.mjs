#!/usr/bin/env node
// Writes src/flame/collapse/frame-scan-wasm.ts and stack-lines-wasm.ts: stackcollapse-perf's frame-line scanner
// (src/flame/collapse/frame-scan.c) and the collapsers' sorted folded output (stack-lines.c) compiled to WebAssembly,
// as base64 constants, so that neither the build nor a run needs a C compiler. Needs clang with the wasm32 target (Debian's clang 14 has it; no linker is used: the object file is
// already a valid module, with its exports from `export_name`, whose custom sections ("linking", "producers") are
// dropped here). test/flame/collapse-perf-wasm.test.ts checks the constants against a fresh compile when clang is
// there. Run after changing the C source:
//   node scripts/collapse-wasm.mjs && npm run build
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'src', 'flame', 'collapse');

/** The frame-line scanner's module bytes. */
export function compileFrameScan(clang = 'clang') {
  return compileModule('frame-scan', clang);
}

/** The folded output's module bytes. */
export function compileStackLines(clang = 'clang') {
  return compileModule('stack-lines', clang);
}

/** The module's bytes: clang's object file of NAME.c without its custom sections (id 0). */
function compileModule(name, clang) {
  const tmp = mkdtempSync(join(tmpdir(), `${name}-`));
  try {
    const obj = join(tmp, `${name}.o`);
    execFileSync(clang, [
      '--target=wasm32',
      '-O2',
      '-nostdlib',
      '-fno-builtin',
      '-c',
      join(dir, `${name}.c`),
      '-o',
      obj,
    ]);
    const b = readFileSync(obj);
    const kept = [b.subarray(0, 8)];
    for (let i = 8; i < b.length;) {
      const at = i;
      const id = b[i++];
      let size = 0;
      for (let shift = 0; ; shift += 7) {
        const x = b[i++];
        size |= (x & 127) << shift;
        if (!(x & 128)) break;
      }
      i += size;
      if (id !== 0) kept.push(b.subarray(at, i));
    }
    return Buffer.concat(kept);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The TypeScript file holding `bytes` as the base64 constant `constant`, with its doc comment. */
function constantFile(doc, constant, bytes) {
  const lines = bytes
    .toString('base64')
    .match(/.{1,100}/g)
    .map((l) => `  '${l}' +`);
  lines[lines.length - 1] = lines[lines.length - 1].slice(0, -2) + ';';
  return `/**\n${doc} */\nexport const ${constant} =\n${lines.join('\n')}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(
    join(dir, 'frame-scan-wasm.ts'),
    constantFile(
      ` * stackcollapse-perf's frame-line scanner (frame-scan.c) as WebAssembly bytes, base64 (made by
 * scripts/collapse-wasm.mjs; test/flame/collapse-perf-wasm.test.ts checks them against a fresh compile when clang is
 * installed). Do not edit: change frame-scan.c and run the script.
`,
      'FRAME_SCAN_WASM',
      compileFrameScan(),
    ),
  );
  writeFileSync(
    join(dir, 'stack-lines-wasm.ts'),
    constantFile(
      ` * The collapsers' sorted folded output (stack-lines.c) as WebAssembly bytes, base64 (made by
 * scripts/collapse-wasm.mjs; test/flame/collapse-perf-wasm.test.ts checks them against a fresh compile when clang is
 * installed). Do not edit: change stack-lines.c and run the script.
`,
      'STACK_LINES_WASM',
      compileStackLines(),
    ),
  );
}
