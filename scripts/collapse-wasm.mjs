#!/usr/bin/env node
// Writes src/flame/collapse/frame-scan-wasm.ts: stackcollapse-perf's frame-line scanner (src/flame/collapse/
// frame-scan.c) compiled to WebAssembly, as a base64 constant, so that neither the build nor a run needs a C
// compiler. Needs clang with the wasm32 target (Debian's clang 14 has it; no linker is used: the object file is
// already a valid module, with its exports from `export_name`, whose custom sections ("linking", "producers") are
// dropped here). test/flame/collapse-perf-wasm.test.ts checks the constant against a fresh compile when clang is
// there. Run after changing the C source:
//   node scripts/collapse-wasm.mjs && npm run build
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'src', 'flame', 'collapse');

/** The module's bytes: clang's object file without its custom sections (id 0). */
export function compileFrameScan(clang = 'clang') {
  const tmp = mkdtempSync(join(tmpdir(), 'frame-scan-'));
  try {
    const obj = join(tmp, 'frame-scan.o');
    execFileSync(clang, [
      '--target=wasm32',
      '-O2',
      '-nostdlib',
      '-fno-builtin',
      '-c',
      join(dir, 'frame-scan.c'),
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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const b64 = compileFrameScan().toString('base64');
  const lines = b64.match(/.{1,100}/g).map((l) => `  '${l}' +`);
  lines[lines.length - 1] = lines[lines.length - 1].slice(0, -2) + ';';
  writeFileSync(
    join(dir, 'frame-scan-wasm.ts'),
    `/**
 * stackcollapse-perf's frame-line scanner (frame-scan.c) as WebAssembly bytes, base64 (made by
 * scripts/collapse-wasm.mjs; test/flame/collapse-perf-wasm.test.ts checks them against a fresh compile when clang is
 * installed). Do not edit: change frame-scan.c and run the script.
 */
export const FRAME_SCAN_WASM =
${lines.join('\n')}
`,
  );
}
