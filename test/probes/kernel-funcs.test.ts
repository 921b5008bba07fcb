import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Btf, BtfKind } from '../../src/kernel/btf.js';
import { FentryProbe } from '../../src/probes/fentry.js';
import {
  btfFuncIds,
  type KernelFunction,
  matchModuleFunctions,
  paramLines,
  isUnsafeToTrace,
  splitTraceable,
} from '../../src/probes/kernel-funcs.js';
import type { AttachPoint } from '../../src/lang/ast.js';

// available_filter_functions style entries: vmlinux's functions bare, a module's as MODULE:NAME
const TRACEABLE = ['kvm:kvm_vcpu_read', 'nf_tables:nf_tables_newtable', 'vfs_read', 'vfs_readv', 'vfs_write'];
const FUNCS: KernelFunction[] = TRACEABLE.map(splitTraceable);
const names = (fs: KernelFunction[]): string[] => fs.map((f) => `${f.module}:${f.func}`);

describe('kernel functions for kprobe/fentry', () => {
  it('gives bare traceable names the module vmlinux', () => {
    assert.deepEqual(FUNCS, [
      { module: 'kvm', func: 'kvm_vcpu_read' },
      { module: 'nf_tables', func: 'nf_tables_newtable' },
      { module: 'vmlinux', func: 'vfs_read' },
      { module: 'vmlinux', func: 'vfs_readv' },
      { module: 'vmlinux', func: 'vfs_write' },
    ]);
  });

  it('matches MODULE:FUNC with vmlinux and globs on either side (kprobe:vmlinux:vfs_read, kprobe:vmlinu*:...)', () => {
    assert.deepEqual(names(matchModuleFunctions(FUNCS, 'vmlinux', 'vfs_read')), ['vmlinux:vfs_read']);
    assert.deepEqual(names(matchModuleFunctions(FUNCS, 'vmlinu*', 'vfs_read')), ['vmlinux:vfs_read']);
    assert.deepEqual(names(matchModuleFunctions(FUNCS, 'vmlinux', 'vfs_rea*')), [
      'vmlinux:vfs_read',
      'vmlinux:vfs_readv',
    ]);
    assert.deepEqual(names(matchModuleFunctions(FUNCS, '*', '*read')), ['kvm:kvm_vcpu_read', 'vmlinux:vfs_read']);
    assert.deepEqual(names(matchModuleFunctions(FUNCS, 'nf_tables', 'nf_tables_newtable')), [
      'nf_tables:nf_tables_newtable',
    ]);
    // a literal name is not a glob: no prefix matches
    assert.deepEqual(names(matchModuleFunctions(FUNCS, 'vmlinux', 'vfs_rea')), []);
    assert.deepEqual(names(matchModuleFunctions(FUNCS, 'vmlinux', 'nonsense')), []);
    assert.deepEqual(names(matchModuleFunctions(FUNCS, 'nonsense', 'vfs_read')), []);
    // vfs_read is vmlinux's, not the module's
    assert.deepEqual(names(matchModuleFunctions(FUNCS, 'kvm', 'vfs_read')), []);
  });

  // the kernel's BTF here (Linux 6.18): these signatures have not changed for many releases
  const btf = Btf.vmlinux();
  const ids = btfFuncIds(btf);

  it('finds BTF functions by name in one pass, agreeing with findType', () => {
    for (const n of ['vfs_read', 'kfree', 'do_exit', 'schedule'])
      assert.equal(ids.get(n), btf.findType(n, BtfKind.FUNC));
    assert.equal(ids.get('no_such_function_here'), undefined);
  });

  it('prints -lv arguments as bpftrace: fentry names and retval, kprobe argN, kretprobe retval or void', () => {
    const id = ids.get('vfs_read')!;
    assert.deepEqual(paramLines(btf, id, 'fentry'), [
      '    struct file * file',
      '    char * buf',
      '    size_t count',
      '    loff_t * pos',
      '    ssize_t retval',
    ]);
    assert.deepEqual(paramLines(btf, id, 'fexit'), paramLines(btf, id, 'fentry'));
    assert.deepEqual(paramLines(btf, id, 'kprobe'), [
      '    struct file * arg0',
      '    char * arg1',
      '    size_t arg2',
      '    loff_t * arg3',
    ]);
    assert.deepEqual(paramLines(btf, id, 'kretprobe'), ['    ssize_t retval']);
    // void functions: no retval line for fentry, `void` for kretprobe
    const kfree = ids.get('kfree')!;
    assert.deepEqual(paramLines(btf, kfree, 'fentry'), ['    const void * object']);
    assert.deepEqual(paramLines(btf, kfree, 'kretprobe'), ['    void']);
    assert.deepEqual(paramLines(btf, ids.get('schedule')!, 'kprobe'), []);
  });

  it('names an fentry/fexit probe with its module, as bpftrace (fentry:vmlinux:vfs_read)', () => {
    const ap: AttachPoint = {
      kind: 'AttachPoint',
      pos: { line: 1, col: 1, offset: 0, end: 15 },
      raw: 'fentry:vfs_read',
      provider: 'fentry',
      parts: ['vfs_read'],
    };
    const id = ids.get('vfs_read')!;
    const params = btf.funcProto(id).params;
    assert.equal(new FentryProbe(ap, 'fentry', 'vfs_read', id, params, btf).name, 'fentry:vmlinux:vfs_read');
    assert.equal(new FentryProbe(ap, 'fexit', 'vfs_read', id, params, btf).name, 'fexit:vmlinux:vfs_read');
  });

  it('gives a struct argument of 9-16 bytes two u64 slots (__sys_bpf: int cmd, bpfptr_t uattr, unsigned int size)', () => {
    const ap: AttachPoint = {
      kind: 'AttachPoint',
      pos: { line: 1, col: 1, offset: 0, end: 15 },
      raw: 'fexit:__sys_bpf',
      provider: 'fexit',
      parts: ['__sys_bpf'],
    };
    const id = ids.get('__sys_bpf')!;
    const p = new FentryProbe(ap, 'fexit', '__sys_bpf', id, btf.funcProto(id).params, btf);
    const rec = p.args as Extract<typeof p.args, { kind: 'record' }>;
    assert.deepEqual(
      rec.fields.map((f) => [f.name, f.offset]),
      [
        ['cmd', 0],
        ['uattr', 8],
        ['size', 24],
      ],
    );
    assert.deepEqual(p.regs, { args: [0, 8, 24], ret: 32 });
  });

  it('leaves out the functions bpftrace refuses to trace (rcu_*, the idle loop)', () => {
    for (const n of ['rcu_read_unlock_strict', 'rcu_note_context_switch', 'default_idle', 'arch_cpu_idle'])
      assert.equal(isUnsafeToTrace(n), true, n);
    for (const n of ['vfs_read', 'call_rcu', '__rcu_read_lock', 'default_idle_call'])
      assert.equal(isUnsafeToTrace(n), false, n);
  });
});
