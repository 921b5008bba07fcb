/**
 * uprobe/uretprobe on the live kernel: a function of the test workload (`num`, which parses each numeric argument)
 * and libc functions, with arg0..N, retval, func and wildcards.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTool } from '../helpers/cli.js';
import { workloadCommand, workloadPath } from '../helpers/workload.js';

describe('uprobe and uretprobe', () => {
  it('counts calls, reads arguments and return values of a function in the workload', async () => {
    const bin = workloadPath();
    const r = await runTool('bpfscope', [
      '-e',
      `uprobe:${bin}:num /pid == cpid/ { @calls[func] = count(); } uretprobe:${bin}:num /pid == cpid/ { @ret[retval] = count(); }`,
      '-c',
      workloadCommand('getppid', 7, 'getuid', 3),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '\n\n@calls[num]: 2\n@ret[3]: 1\n@ret[7]: 1\n');
  });

  it('resolves a library by name and expands wildcards over its symbols', async () => {
    const r = await runTool('bpfscope', ['-e', 'uprobe:libc:getppi* { @[probe] = count(); } BEGIN { exit(); }']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^Attached 2 probes$/m);
  });

  it('reports an unknown symbol at the attach point with a suggestion', async () => {
    const r = await runTool('bpfscope', ['-e', 'uprobe:libc:mallocc { }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /ERROR: Could not resolve symbol: \/\S+libc\.so\.6:mallocc\n/);
    assert.match(r.stderr, /HINT: Did you mean .*uprobe:\/\S+libc\.so\.6:malloc\b/);
  });

  it('rejects retval outside return probes', async () => {
    const r = await runTool('bpfscope', ['-e', 'uprobe:libc:malloc { @ = retval; }']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /The retval builtin can only be used with return probes/);
  });
});
