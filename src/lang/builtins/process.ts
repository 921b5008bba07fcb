/**
 * The process and thread builtins (bpftrace `docs/stdlib.md`): `pid`, `tid` (as seen from bpfscope's PID
 * namespace; `pid(init)` from the initial one), `uid`, `gid`, `username`, `comm`, `ppid`, `pcomm`, `leader_comm`,
 * `leader_tid` (the last three are rewritten to `curtask` fields by lang/passes/stdlib.ts, as bpftrace's stdlib
 * macros), `cpid`, `curtask`, `cpu`, `numaid`, `ncpus`, `rand`.
 */
import { HELPER_ID as H } from '../../bpf/helpers.js';
import * as I from '../../bpf/insn.js';
import { stringType, U32, U64 } from '../types.js';
import type { CallExpr } from '../ast.js';
import type { BuiltinChecker, BuiltinFunction, BuiltinGen, BuiltinVariable } from './types.js';

/** `pid(curr_ns)` / `pid(init)`: the id as seen from bpfscope's PID namespace or the initial one (bpftrace 0.23). */
function nsCheck(c: CallExpr, a: BuiltinChecker): typeof U32 | null {
  const x = c.args[0];
  if (c.args.length > 1 || (x && (x.kind !== 'BuiltinExpr' || !['curr_ns', 'init'].includes(x.name)))) {
    a.error(c.pos, `${c.name}() expects no argument, curr_ns or init`);
    return null;
  }
  return U32;
}

/** The current task's uid (low 32 bits of bpf_get_current_uid_gid) or gid (high 32 bits). */
function uidGid(g: BuiltinGen, which: 'uid' | 'gid'): number {
  const r = g.callHelper(H.get_current_uid_gid, []);
  g.emit(which === 'gid' ? I.alu64Imm('rsh', r, 32) : I.mov32(r, r));
  return r;
}

export const PROCESS_VARIABLES: readonly BuiltinVariable[] = [
  { name: 'pid', type: U32, ownFunction: true, doc: { usage: '`pid`', note: 'process id (tgid)' } },
  { name: 'tid', type: U32, ownFunction: true, doc: { usage: '`tid`', note: 'thread id' } },
  { name: 'uid', type: U32, generate: (g) => uidGid(g, 'uid'), doc: { usage: '`uid`' } },
  { name: 'gid', type: U32, generate: (g) => uidGid(g, 'gid'), doc: { usage: '`gid`' } },
  {
    name: 'username',
    type: { kind: 'username' },
    generate: (g) => uidGid(g, 'uid'),
    doc: { usage: '`username`', note: 'the uid, printed as its name from /etc/passwd' },
  },
  {
    name: 'comm',
    type: stringType(16),
    generate(g) {
      const off = g.zeroedTemp(16);
      g.callHelper(H.get_current_comm, [{ stack: off }, { imm: 16 }]);
      return { kind: 'mem', off, size: 16 };
    },
    doc: { usage: '`comm`' },
  },
  {
    name: 'ppid',
    type: U32,
    notParserName: true,
    doc: { usage: '`ppid`, `ppid(task)`', note: "`curtask->real_parent->tgid`, offsets from the kernel's BTF" },
  },
  {
    name: 'pcomm',
    doc: { usage: '`pcomm`, `pcomm(task)`', note: "`curtask->real_parent->comm`: the parent process's name" },
  },
  {
    name: 'leader_comm',
    doc: {
      usage: '`leader_comm`, `leader_comm(task)`',
      note: "`curtask->group_leader->comm`: the thread group leader's name",
    },
  },
  {
    name: 'leader_tid',
    doc: {
      usage: '`leader_tid`, `leader_tid(task)`',
      note: "`curtask->group_leader->pid`: the thread group leader's thread id",
    },
  },
  { name: 'cpid', type: U32, doc: { usage: '`cpid`', note: 'the `-c` child' } },
  {
    name: 'curtask',
    generate: (g) => g.callHelper(H.get_current_task, []),
    doc: { usage: '`curtask`', note: '`struct task_struct *`' },
  },
  { name: 'cpu', type: U32, generate: (g) => g.callHelper(H.get_smp_processor_id, []), doc: { usage: '`cpu`' } },
  { name: 'numaid', type: U32, generate: (g) => g.callHelper(H.get_numa_node_id, []), doc: { usage: '`numaid`' } },
  {
    name: 'ncpus',
    type: U64,
    generate: (g) => g.constant(g.target.onlineCpus().length),
    doc: { usage: '`ncpus`', note: 'online CPUs, at compile time' },
  },
  { name: 'rand', type: U32, generate: (g) => g.callHelper(H.get_prandom_u32, []), doc: { usage: '`rand`' } },
];

export const PROCESS_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'pid',
    check: nsCheck,
    doc: {
      usage: '`pid(curr_ns)`, `pid(init)`',
      note: "the id as seen from bpfscope's PID namespace (also what `pid` gives, as current bpftrace) or the initial one (`bpf_get_ns_current_pid_tgid` when bpfscope runs in another namespace)",
    },
  },
  { name: 'tid', check: nsCheck, doc: { usage: '`tid(curr_ns)`, `tid(init)`', note: 'as `pid(...)`' } },
];
