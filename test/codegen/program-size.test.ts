/**
 * Programs whose size alone used to break the compiler (issue 19, "Found, to fix" 1): nothing between parsing and
 * loading may recurse, or spread an array into a call, to a depth that grows with the program, and the kernel's
 * 64-maps-per-program limit (MAX_USED_MAPS) is an error pointing at the program before anything is loaded.
 * Generated programs; no kernel needed (link() stops short of BPF_PROG_LOAD).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as I from '../../src/bpf/insn.js';
import { IrFunction } from '../../src/codegen/ir.js';
import { peephole } from '../../src/codegen/peephole.js';
import { allocateRegisters } from '../../src/codegen/regalloc.js';
import { compile } from '../../src/compiler.js';
import { CompileError, formatDiagnostics } from '../../src/lang/diagnostics.js';
import { link } from '../../src/runtime/loader.js';

/** `BEGIN { STMT(0) STMT(1) ... exit(); }` on one line. */
function generated(n: number, stmt: (i: number) => string): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(stmt(i));
  return `BEGIN { ${parts.join(' ')} exit(); }`;
}

describe('program size', () => {
  it('8,000 map assignments: the 64-maps limit, pointing at the first map over it', () => {
    const text = generated(8000, (i) => `@m${i} = ${i};`);
    let err: unknown;
    try {
      compile({ name: 'stdin', text });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof CompileError, `not a CompileError: ${String(err)}`);
    const out = formatDiagnostics(err.diagnostics, { name: 'stdin', text });
    const lines = out.split('\n');
    // three of bpfscope's own maps are referenced before the user's (the fourth, exit()'s flag, after them), so
    // @m61 is the 65th map the program references
    assert.equal(
      lines[0],
      'stdin:1:660-669: ERROR: The probe begin uses 8004 maps, more than the 64 the kernel allows in one BPF program ' +
        "(bpfscope's ring buffer and control maps count too)",
    );
    assert.equal(text.slice(659, 668), '@m61 = 61');
    assert.equal(
      lines[3],
      'HINT: use fewer maps per probe: one map with a key (@m[1], @m[2], ...) instead of many maps, or split the work ' +
        'across probes',
    );
  });

  it('60 maps (64 with bpfscope’s own) compile; 61 are over the limit', () => {
    const ok = compile({ name: 'stdin', text: generated(60, (i) => `@m${i} = ${i};`) });
    assert.equal(ok.compiled.maps.length, 60);
    assert.throws(
      () => compile({ name: 'stdin', text: generated(61, (i) => `@m${i} = ${i};`) }),
      /The probe begin uses 65 maps, more than the 64/,
    );
  });

  it('20,000 printf statements compile and link (regalloc, peephole, emit) without exhausting the stack', () => {
    const r = compile({ name: 'stdin', text: generated(20_000, (i) => `printf("%d\\n", ${i});`) });
    assert.equal(r.compiled.programs.length, 1);
    const out = link(r.compiled.programs[0]!, () => 3);
    assert.equal(r.compiled.printfs.length, 20_000);
    // every printf reserves ring buffer space or outputs a record: far more than 100,000 instructions in one list
    assert.ok(out.insns.length > 200_000, `${out.insns.length} instructions`);
    assert.equal(out.positions.length, out.insns.length);
  });

  it('peephole and register allocation keep a 300,000-instruction function whole', () => {
    const fn = new IrFunction('long');
    const v = fn.vreg();
    fn.emit(I.mov64Imm(v, 0));
    for (let i = 0; i < 300_000; i++) fn.emit(I.alu64Imm('add', v, 1));
    fn.emit(I.mov64(0, v));
    fn.emit(I.exit());
    peephole(fn);
    allocateRegisters(fn);
    const adds = fn.items.filter((it) => 'code' in it && it.code === I.alu64Imm('add', 1, 1).code);
    assert.equal(adds.length, 300_000);
  });
});
