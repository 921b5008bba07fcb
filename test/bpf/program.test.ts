import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AttachType, ProgType, VerifierError } from '../../src/bpf/program.js';
import { BpfscopeError } from '../../src/errors.js';

test('program and attach type numbers (uapi bpf.h, KERNEL.md)', () => {
  assert.deepEqual(
    [ProgType.KPROBE, ProgType.TRACEPOINT, ProgType.PERF_EVENT, ProgType.RAW_TRACEPOINT, ProgType.TRACING],
    [2, 5, 7, 17, 26],
  );
  assert.deepEqual(
    [
      AttachType.TRACE_RAW_TP,
      AttachType.TRACE_FENTRY,
      AttachType.TRACE_FEXIT,
      AttachType.PERF_EVENT,
      AttachType.TRACE_KPROBE_MULTI,
      AttachType.TRACE_UPROBE_MULTI,
    ],
    [23, 24, 25, 41, 42, 48],
  );
});

test('VerifierError: message names the program and the last meaningful log line', () => {
  const log =
    '0: R1=ctx() R10=fp0\n0: (95) exit\nR0 !read_ok\nprocessed 1 insns (limit 1000000) max_states_per_insn 0\n';
  const e = new VerifierError(13, log, 'my_prog');
  assert.ok(e instanceof BpfscopeError);
  assert.equal(e.name, 'VerifierError');
  assert.equal(e.errno, 13);
  assert.equal(e.log, log);
  assert.deepEqual(e.lines, [
    '0: R1=ctx() R10=fp0',
    '0: (95) exit',
    'R0 !read_ok',
    'processed 1 insns (limit 1000000) max_states_per_insn 0',
  ]);
  assert.equal(e.message, "the BPF verifier rejected program 'my_prog': R0 !read_ok");
  assert.equal(e.hint, 'run with -v to see the full verifier log');
  assert.equal(new VerifierError(22, '', '').message, 'the BPF verifier rejected program');
});
