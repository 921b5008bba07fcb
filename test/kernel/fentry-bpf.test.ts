/**
 * The functions of loaded BPF programs, as `fentry:bpf:ID:NAME` finds them: bpfscope's own programs carry BTF naming
 * their main function as bpftrace does (`sanitised probe name_N`), read back here from a running bpfscope through
 * bpf_prog_info.func_info and the program's BTF. (Attaching fentry needs BPF trampolines, which this kernel refuses:
 * bpftrace's runtime test probe:attach_to_bpf_program runs it in the guest kernels.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bpfProgramFunctions } from '../../src/probes/fentry-bpf.js';
import { FentryProbe } from '../../src/probes/fentry.js';
import type { AttachPoint } from '../../src/lang/ast.js';
import { startTool } from '../helpers/cli.js';

describe('fentry:bpf targets', () => {
  it('finds a running bpfscope program by the BTF name bpftrace gives it (interval_ms_1234_1)', async () => {
    const run = startTool(
      'bpfscope',
      ['-e', 'interval:ms:1234 { @a = 1; } interval:s:97 { @b = 1; } interval:s:3 { exit(); }'],
      { timeoutMs: 20000 },
    );
    try {
      assert.ok(await run.waitFor(/Attached 3 probes/, 15000), run.stderr());
      const funcs = bpfProgramFunctions().filter((f) => /^interval_(ms_1234_1|s_97_2)$/.test(f.name));
      const names = [...new Set(funcs.map((f) => f.name))].sort();
      assert.deepEqual(names, ['interval_ms_1234_1', 'interval_s_97_2']);
      const f = funcs.find((x) => x.name === 'interval_ms_1234_1')!;
      // one parameter (the context): fexit's retval is the next slot
      const ap: AttachPoint = {
        kind: 'AttachPoint',
        pos: { line: 1, col: 1, offset: 0, end: 10 },
        raw: 'fentry:bpf:interval_us_*',
        provider: 'fentry',
        parts: ['bpf', 'interval_us_*'],
      };
      const params = f.btf.funcProto(f.btf.refType(f.typeId)).params;
      const p = new FentryProbe(ap, 'fexit', f.name, f.typeId, params, f.btf, { progId: f.progId, progFd: 1234 });
      assert.equal(p.name, `fexit:bpf:${f.progId}:interval_ms_1234_1`);
      assert.equal(p.attachBtfObjFd, 1234);
      assert.deepEqual(p.regs, { args: [0], ret: 8 });
    } finally {
      run.signal('SIGINT');
      await run.done;
    }
  });
});
