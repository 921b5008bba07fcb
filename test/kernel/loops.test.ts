/**
 * Loops whose body runs as a callback subprogram (codegen/gen.ts callbackLoop): `for ($kv : @m)` with
 * bpf_for_each_map_elem and ranges with run-time bounds with bpf_loop; program BTF + func_info make the kernel
 * accept the callbacks (bpf/btf-writer.ts). Expected outputs follow bpftrace's runtime tests (tests/runtime/for).
 */
import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import { describe, it } from 'node:test';
import { funcInfoBtf } from '../../src/bpf/btf-writer.js';
import { runTool } from '../helpers/cli.js';
import { workloadCommand } from '../helpers/workload.js';

async function run(prog: string, ...more: string[]): Promise<string> {
  const r = await runTool('bpfscope', ['-e', prog, ...more]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

describe('for ($kv : @map)', () => {
  it('walks every entry with its key and value; outer variables are read and updated', async () => {
    const out = await run(
      'BEGIN { @x[1] = 5; @x[2] = 10; $t = 100; for ($kv : @x) { $t += $kv.1; @seen[$kv.0] = $kv.1 * 2; } printf("%d\\n", $t); clear(@x); exit(); }',
    );
    assert.equal(out, '115\n\n\n@seen[1]: 10\n@seen[2]: 20\n');
  });

  it('keys with several elements are a tuple; string values; count() values summed over CPUs', async () => {
    const out = await run(
      'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @c[comm, 7] = count(); } END { @s["ab", 1] = "xy"; for ($kv : @c) { printf("%s %d %d\\n", $kv.0.0, $kv.0.1, $kv.1); } for ($kv : @s) { printf("%s|%d|%s\\n", $kv.0.0, $kv.0.1, $kv.1); } clear(@c); clear(@s); }',
      '-c',
      workloadCommand('comm', 'bpfs_loop', 'getppid', 5),
    );
    // END's output, then bpftrace's two newlines before the (now empty) maps
    assert.equal(out, 'bpfs_loop 7 5\nab|1|xy\n\n\n');
  });

  it('break stops the walk, continue skips, return ends the probe', async () => {
    const out = await run(
      'BEGIN { @m[1] = 1; @m[2] = 2; @m[3] = 3; $n = 0; for ($kv : @m) { $n++; break; } $k = 0; for ($kv : @m) { if ($kv.0 == 2) { continue; } $k += $kv.1; } printf("%d %d\\n", $n, $k); for ($kv : @m) { return; } printf("not reached\\n"); }',
    );
    assert.equal(out, '1 4\n\n\n@m[1]: 1\n@m[2]: 2\n@m[3]: 3\n');
  });

  it('two loops may use one variable name with different types (loop scope)', async () => {
    const out = await run(
      'BEGIN { @a[16] = 32; @b[64] = "aa"; for ($kv : @a) { print($kv); } for ($kv : @b) { print($kv); } $kv = 1; print($kv); clear(@a); clear(@b); exit(); }',
    );
    assert.equal(out, '(16, 32)\n(64, aa)\n1\n\n\n');
  });

  it(
    'min/max/avg values are combined over the CPUs the events ran on',
    { skip: cpus().length < 2 ? 'one CPU' : undefined },
    async () => {
      const out = await run(
        'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @mx[1] = max(cpu + 10); @mn[1] = min(cpu + 10); @av[1] = avg(cpu * 100); } END { for ($kv : @mx) { printf("max %d\\n", $kv.1); } for ($kv : @mn) { printf("min %d\\n", $kv.1); } for ($kv : @av) { printf("avg %d\\n", $kv.1); } clear(@mx); clear(@mn); clear(@av); }',
        '-c',
        workloadCommand('cpu', 0, 'getppid', 1, 'cpu', 1, 'getppid', 3),
      );
      // one call on CPU 0, three on CPU 1: avg of 0, 100, 100, 100
      assert.equal(out, 'max 11\nmin 10\navg 75\n\n\n');
    },
  );

  it('rejects walking a map without keys, a single element, or a histogram (without follow-on errors)', async () => {
    const h = await runTool('bpfscope', ['-e', 'BEGIN { @h[1] = hist(5); for ($kv : @h) { print($kv.1); } }']);
    assert.equal(h.code, 1);
    assert.match(h.stderr, /^stdin:1:37-39: ERROR: for loops over hist\(\) maps are not supported yet$/m);
    assert.doesNotMatch(h.stderr, /Undefined or undeclared variable/);
    const a = await runTool('bpfscope', ['-e', 'BEGIN { @a = 1; for ($kv : @a) { } }']);
    assert.equal(a.code, 1);
    assert.match(a.stderr, /Loop expression must be a map with keys: @a has none/);
    const b = await runTool('bpfscope', ['-e', 'BEGIN { @a[1] = 1; for ($kv : @a[1]) { } }']);
    assert.equal(b.code, 1);
  });
});

describe('for ($i : a..b) with run-time bounds', () => {
  it('runs end - start times (none when empty), updating outer variables, with break', async () => {
    const out = await run(
      'BEGIN { @a = 10; for ($i : 0..@a) { @a += 1; } $s = 0; $lo = 3; for ($j : $lo..7) { $s += $j; if ($j == 5) { break; } } $z = 0; for ($k : 5..$lo) { $z++; } printf("%d %d\\n", $s, $z); exit(); }',
    );
    assert.equal(out, '12 0\n\n\n@a: 20\n');
  });
});

describe('program BTF for callbacks', () => {
  it('lays out INT, PTR, then FUNC_PROTO + FUNC per function with its linkage', () => {
    const { btf, funcTypeIds } = funcInfoBtf([
      { name: 'main', params: 1, linkage: 0 },
      { name: 'cb', params: 4, linkage: 0 },
    ]);
    assert.deepEqual(funcTypeIds, [4, 6]);
    assert.equal(btf.readUInt16LE(0), 0xeb9f);
    const typeLen = btf.readUInt32LE(12);
    // INT (16) + PTR (12) + proto(1 param: 12 + 8) + FUNC (12) + proto(4 params: 12 + 32) + FUNC (12)
    assert.equal(typeLen, 16 + 12 + 20 + 12 + 44 + 12);
    assert.equal(btf.readUInt32LE(16), typeLen);
    const strings = btf.subarray(24 + typeLen).toString('latin1');
    assert.equal(strings, '\0long\0a0\0main\0a0\0a1\0a2\0a3\0cb\0');
  });
});

describe('loops in probes whose name starts with a digit', () => {
  it('load (the callback BTF names are C identifiers; tests/runtime/variable "late map evaluation with ctx capture")', async () => {
    const out = await run(
      'interval:ms:100 { $x = 1; for ($kv : @a) { print(($x, $kv.0, $kv.1)); break; } if (@a[1]) { exit(); } @a[1] = 1; }',
    );
    assert.equal(out, '(1, 1, 1)\n\n\n@a[1]: 1\n');
  });
});
