/**
 * A program the verifier rejects is reported against the source construct whose instruction the verifier stopped
 * at, with the verifier's last lines (runtime/loader.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as I from '../../src/bpf/insn.js';
import { R0, R1 } from '../../src/bpf/opcodes.js';
import { IrFunction } from '../../src/codegen/ir.js';
import type { Span } from '../../src/lang/ast.js';
import type { ExpandedProbe } from '../../src/probes/types.js';
import { lastInsnIndex, loadPlan, ProgramRejected } from '../../src/runtime/loader.js';

const span = (col: number): Span => ({ line: 1, col, offset: col - 1, end: col + 4 });

describe('verifier rejections map back to the source', () => {
  it('finds the last instruction the log mentions', () => {
    assert.equal(
      lastInsnIndex([
        '0: R1=ctx() R10=fp0',
        '0: (79) r0 = *(u64 *)(r10 -8)',
        'invalid read from stack off -8+0 size 8',
        'processed 1 insns',
      ]),
      0,
    );
    assert.equal(lastInsnIndex(['nothing here']), undefined);
  });

  it('reports the span of the rejected instruction and the verifier tail', () => {
    const fn = new IrFunction('bad');
    fn.pos = span(1);
    const ctx = fn.vreg();
    fn.emit(I.mov64(ctx, R1));
    fn.pos = span(9);
    fn.emit(I.mov64Imm(R0, 0));
    fn.pos = span(20); // the construct that dereferences a plain number
    const n = fn.vreg();
    fn.emit(I.mov64Imm(n, 4096));
    const v = fn.vreg();
    fn.emit(I.ldx(8, v, n, 0));
    fn.emit(I.mov64(R0, v));
    fn.emit(I.exit());
    const expanded = { provider: 'begin', name: 'begin', progType: 17, special: 'begin' } as unknown as ExpandedProbe;
    assert.throws(
      () => loadPlan({ fn, expanded, kernelName: 'bad_test' }, () => 0),
      (e: unknown) => {
        assert.ok(e instanceof ProgramRejected);
        assert.deepEqual(e.pos, span(20));
        assert.match(e.message, /^The BPF verifier rejected the program for begin \(at instruction \d+\)$/);
        assert.ok(
          e.verifierTail.some((l) => /invalid mem access 'scalar'/.test(l)),
          e.verifierTail.join('\n'),
        );
        return true;
      },
    );
  });
});
