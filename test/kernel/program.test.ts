import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BpfMap, MapType } from '../../src/bpf/map.js';
import { AttachType, LOG_LEVEL_STATS, loadProgram, ProgType, VerifierError } from '../../src/bpf/program.js';
import { BpfscopeError } from '../../src/errors.js';
import { Btf } from '../../src/kernel/btf.js';
import { Errno } from '../../src/kernel/ffi.js';
import { exit, ldMapFd, ldxDw, loadedIds, movImm, prog } from './raw-insns.js';

test('loadProgram + testRun returns the known value; info; close removes it', () => {
  const p = loadProgram({ type: ProgType.RAW_TRACEPOINT, name: 'prog_test_7', insns: prog(movImm(0, 7), exit()) });
  const info = p.info();
  assert.equal(info.name, 'prog_test_7');
  assert.equal(info.type, ProgType.RAW_TRACEPOINT);
  assert.equal(info.verifiedInsns, 2);
  assert.equal(p.testRun().retval, 7);
  assert.ok(loadedIds().progs.has(info.id));
  p.close();
  p.close();
  assert.equal(p.closed, true);
  assert.throws(() => p.fd, BpfscopeError);
  assert.equal(loadedIds().progs.has(info.id), false);
});

test('the program lists the maps it references', () => {
  const m = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name: 'prog_test_m' });
  try {
    // r1 = map; r0 = 0; exit  (the reference alone binds the map to the program)
    const p = loadProgram({
      type: ProgType.RAW_TRACEPOINT,
      name: 'prog_test_map',
      insns: prog(ldMapFd(1, m.fd), movImm(0, 0), exit()),
    });
    try {
      assert.deepEqual(p.info().mapIds, [m.info().id]);
    } finally {
      p.close();
    }
  } finally {
    m.close();
  }
});

test('an invalid program throws VerifierError with the verifier message', () => {
  // Reads 8 bytes at ctx+4096: past the raw_tp argument array.
  const insns = prog(ldxDw(0, 1, 4096), exit());
  assert.throws(
    () => loadProgram({ type: ProgType.RAW_TRACEPOINT, name: 'prog_test_bad', insns }),
    (e: unknown) => {
      assert.ok(e instanceof VerifierError);
      assert.ok(e instanceof BpfscopeError);
      assert.equal(e.errno, Errno.EACCES);
      assert.match(e.log, /invalid bpf_context access off=4096 size=8/);
      assert.ok(e.lines.some((l) => /invalid bpf_context access/.test(l)));
      assert.match(e.message, /^the BPF verifier rejected program 'prog_test_bad': invalid bpf_context access/);
      return true;
    },
  );
});

test('logLevel STATS keeps the verifier statistics of a successful load', () => {
  const p = loadProgram({
    type: ProgType.RAW_TRACEPOINT,
    name: 'prog_test_st',
    insns: prog(movImm(0, 0), exit()),
    logLevel: LOG_LEVEL_STATS,
  });
  p.close();
  assert.match(p.log ?? '', /processed 2 insns/);
});

test('tp_btf: TRACING program with expected attach type and attach_btf_id of btf_trace_sched_switch', () => {
  const btf = Btf.vmlinux();
  const id = btf.typedefId('btf_trace_sched_switch');
  assert.ok(id !== undefined);
  const p = loadProgram({
    type: ProgType.TRACING,
    name: 'prog_test_tpbtf',
    insns: prog(movImm(0, 0), exit()),
    expectedAttachType: AttachType.TRACE_RAW_TP,
    attachBtfId: id,
  });
  assert.equal(p.info().type, ProgType.TRACING);
  p.close();
});
