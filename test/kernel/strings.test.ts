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

/**
 * Current bpftrace (e1b7c393 `Config::pad_max_strlen`, `types_format.cpp`): str() keeps up to `max_strlen`
 * characters and a string that fills them without its NUL prints with `str_trunc_trailer` (`..`); the runtime
 * tests `call` "str_truncated", "str_truncated_custom", "explicit string truncation" and `regression` "config
 * max_strlen and on_stack_limit".
 */
describe('truncated strings', () => {
  const prog = (body: string): string =>
    `tracepoint:syscalls:sys_enter_openat /pid == cpid && strncmp(str(args.filename), "/tmp/bpfs-", 10) == 0/ { ${body} }`;
  const open = (path: string): string => workloadCommand('openat', path, 1);

  it('prints max_strlen characters and `..` (BPFTRACE_MAX_STRLEN=10), in printf and in map keys', async () => {
    const r = await runTool(
      'bpfscope',
      [
        '-e',
        prog(
          'printf("P: %s|%s|%s\\n", str(args.filename), str(args.filename, 3), str(args.filename, 99)); @[str(args.filename)] = count();',
        ),
        '-c',
        open('/tmp/bpfs-trunc-abcdefgh'),
      ],
      { env: { BPFTRACE_MAX_STRLEN: '10' } },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'P: /tmp/bpfs-..|/t|/tmp/bpfs-..\n\n\n@[/tmp/bpfs-..]: 1\n');
  });

  it('a full char[N] member of a struct the program defines prints without `..` (bpftrace: string[N+1])', async () => {
    // tests/runtime/other "short non null-terminated string print"; a variable, a map value and a map key
    const r = await runTool('bpfscope', [
      '-e',
      'struct F { char s[5]; } BEGIN { $x = "hellothere"; $a = ((struct F*)&$x)->s; printf("%s|\\n", $a); @m = $a; @k[$a] = 1; exit(); }',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'hello|\n\n\n@k[hello]: 1\n@m: hello\n');
  });

  it('a string one byte shorter than max_strlen prints whole', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      `config = { max_strlen = 12 } ${prog('print(str(args.filename));')}`,
      '-c',
      open('/tmp/bpfs-a'),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '/tmp/bpfs-a\n\n\n');
  });

  it('takes the trailer from the config block or BPFTRACE_STR_TRUNC_TRAILER (the environment wins)', async () => {
    const text = `config = { max_strlen = 8; str_trunc_trailer = "~" } ${prog('print(str(args.filename));')}`;
    const a = await runTool('bpfscope', ['-e', text, '-c', open('/tmp/bpfs-trailer')]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(a.stdout, '/tmp/bpf~\n\n\n');
    const b = await runTool('bpfscope', ['-e', text, '-c', open('/tmp/bpfs-trailer')], {
      env: { BPFTRACE_STR_TRUNC_TRAILER: '_xxx' },
    });
    assert.equal(b.code, 0, b.stderr);
    assert.equal(b.stdout, '/tmp/bpf_xxx\n\n\n');
  });
});
