/**
 * Strings longer than the 512-byte BPF stack allows (`max_strlen` up to 16384): a probe whose frame does not fit
 * keeps it in a frame map (codegen/frame.ts). Expected outputs are those of current bpftrace's runtime tests
 * `call` "str_big", "str_big_printf", "str_big_tuple", "str_big_strncmp" and "str_big_read" (revision e1b7c393),
 * with a 5,555-byte path opened by the workload instead of exec'd.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compile } from '../../src/compiler.js';
import { runTool } from '../helpers/cli.js';
import { workloadCommand } from '../helpers/workload.js';

const BIG = `/${'X'.repeat(5555)}`;
const env = { BPFTRACE_MAX_STRLEN: '9999' };

describe('strings larger than the BPF stack', () => {
  it('str() of a 5,555-byte path as a map key, in printf and in a nested tuple', async () => {
    const r = await runTool(
      'bpfscope',
      [
        '-e',
        'tracepoint:syscalls:sys_enter_openat /pid == cpid && args.filename != 0/ { $s = str(args.filename); if (strncmp($s, "/XXX", 4) == 0) { @[$s] = count(); printf("%s\\n", $s); print((1, (2, $s))); } }',
        '-c',
        workloadCommand('openat', BIG, 1),
      ],
      { env },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${BIG}\n(1, (2, ${BIG}))\n\n\n@[${BIG}]: 1\n`);
  });

  it('a 9,999-byte str() copied between maps (str_big_read)', async () => {
    const r = await runTool('bpfscope', ['-e', 'BEGIN { @s = str(0); @ss = @s; print("success!"); exit() }'], {
      env,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'success!\n\n\n@s: \n@ss: \n');
  });

  it('uses a frame map only when the frame does not fit the stack', () => {
    const small = compile({ name: 'stdin', text: 'BEGIN { $s = str(0); print($s); }' });
    assert.equal(small.compiled.frameMaps.length, 0);
    const big = compile({ name: 'stdin', text: 'config = { max_strlen = 4000 } BEGIN { $s = str(0); print($s); }' });
    assert.equal(big.compiled.frameMaps.length, 1);
    assert.ok(big.compiled.frameMaps[0]!.size >= 4000);
  });

  it('a frame beyond the frame map limit is a clear error', async () => {
    const r = await runTool(
      'bpfscope',
      ['-e', 'BEGIN { $a = str(0); $b = str(0); $c = str(0); $d = str(0); $e = str(0); $f = str(0); $g = str(0); }'],
      { env: { BPFTRACE_MAX_STRLEN: '16384' } },
    );
    assert.equal(r.code, 1);
    assert.match(r.stderr, /bytes of scratch memory, more than bpfscope's 65528: use shorter strings \(max_strlen\)/);
  });
});
