/**
 * Map declarations on the live kernel: the declared BPF map type and size are what the kernel holds (read from the
 * running process's map fds with bpftool), and the maps behave as their types do.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { runTool, startTool } from '../helpers/cli.js';
import { workloadCommand } from '../helpers/workload.js';

/** `{name: {type, max_entries}}` of the BPF maps process `pid` holds open (its fdinfo `map_id:` lines). */
function mapsOf(pid: number): Record<string, { type: string; max_entries: number }> {
  const out: Record<string, { type: string; max_entries: number }> = {};
  for (const fd of readdirSync(`/proc/${pid}/fdinfo`)) {
    let info: string;
    try {
      info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    } catch {
      continue;
    }
    const id = /^map_id:\s+(\d+)$/m.exec(info)?.[1];
    if (!id) continue;
    const m = JSON.parse(execFileSync('bpftool', ['-j', 'map', 'show', 'id', id], { encoding: 'utf8' })) as {
      name: string;
      type: string;
      max_entries: number;
    };
    out[m.name] = { type: m.type, max_entries: m.max_entries };
  }
  return out;
}

describe('map declarations on the kernel', () => {
  it('create the declared map types and sizes', async () => {
    const run = startTool('bpfscope', [
      '-e',
      'let @l = lruhash(7); let @c = percpuarray(1); let @p = percpulruhash(9); let @h = percpuhash(11); ' +
        'tracepoint:syscalls:sys_enter_getppid { @l[tid] = 1; @c = count(); @p[tid] = count(); @h[tid] = sum(1); @u[tid] = 1; }',
    ]);
    try {
      assert.ok(await run.waitFor(/Attached 1 probe/, 20_000), run.stderr());
      const maps = mapsOf(run.pid);
      assert.deepEqual(maps.AT_l, { type: 'lru_hash', max_entries: 7 });
      assert.deepEqual(maps.AT_c, { type: 'percpu_array', max_entries: 1 });
      assert.deepEqual(maps.AT_p, { type: 'lru_percpu_hash', max_entries: 9 });
      assert.deepEqual(maps.AT_h, { type: 'percpu_hash', max_entries: 11 });
      assert.equal(maps.AT_u?.type, 'hash', 'an undeclared map keeps the default type');
      assert.equal(maps.AT_u?.max_entries, 4096);
    } finally {
      run.signal('SIGINT');
      await run.done;
    }
  });

  it('an LRU hash keeps the newest keys; a percpuarray count sums the CPUs and is zeroed by clear()', async () => {
    const r = await runTool('bpfscope', [
      '-e',
      'let @l = lruhash(3); let @c = percpuarray(1); ' +
        'tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @n++; @l[@n] = @n; @c = count(); } ' +
        'END { print(@c); clear(@c); print(@c); }',
      '-c',
      workloadCommand('getppid', 6),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^@c: 6\n[\s\S]*^@c: 0$/m);
    const kept = [...r.stdout.matchAll(/^@l\[(\d+)\]: \1$/gm)].map((m) => Number(m[1]));
    assert.ok(kept.length >= 1 && kept.length <= 3, r.stdout);
    assert.ok(kept.includes(6), `the newest key survives eviction\n${r.stdout}`);
  });
});
