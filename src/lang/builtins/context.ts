/**
 * What the probe's context offers (bpftrace `docs/stdlib.md`): `probe`, `probetype`, `func`, `args`, `argN`, `retval`,
 * `ctx`, `usermode`, `reg(name)`. Their types depend on the attach point (`lang/probe.ts` ExpandedProbe: a
 * tracepoint's record, pt_regs offsets, USDT operands, BTF arguments), so the analyser's `builtin()` types them.
 */
import { PT_REGS_OFFSETS } from '../ptregs.js';
import { U64 } from '../types.js';
import type { BuiltinFunction, BuiltinVariable } from './types.js';

export const CONTEXT_VARIABLES: readonly BuiltinVariable[] = [
  {
    name: 'probe',
    doc: { usage: '`probe`', note: "the attach point's full name (`begin`/`end` for BEGIN/END, as current bpftrace)" },
  },
  {
    name: 'probetype',
    doc: { usage: '`probetype`', note: '`special` for BEGIN/END, else the provider' },
  },
  { name: 'func', doc: { usage: '`func`', note: "the probed function's name (by attach cookie on multi links)" } },
  {
    name: 'args',
    doc: {
      usage: '`args`, `args.FIELD`',
      note: 'tracepoint records from the format file (`__data_loc` strings), BTF arguments (tp_btf, fentry), USDT operands; `args` as a whole prints as a struct',
    },
  },
  {
    name: 'argN',
    pattern: /^arg[0-9]+$/,
    doc: { usage: '`arg0`..`argN`', note: 'registers of kprobe/uprobe contexts (x86-64 pt_regs), USDT operands' },
  },
  { name: 'retval', doc: { usage: '`retval`', note: 'return probes' } },
  {
    name: 'ctx',
    doc: {
      usage: '`ctx`',
      note: 'tracepoints: a pointer to the `args` record; kprobe/uprobe/usdt/perf-event probes: `struct pt_regs *`; rawtracepoint/fentry/fexit: `uint64 *` to the argument slots',
    },
  },
  {
    name: 'usermode',
    doc: {
      usage: '`usermode`',
      note: 'x86-64; kprobe, uprobe, usdt and perf-event probes, whose context holds the registers; 1 in BEGIN/END',
    },
  },
];

export const CONTEXT_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'reg',
    arity: [1, 1],
    check(c, a) {
      const x = c.args[0]!;
      if (x.kind !== 'StrLit' || PT_REGS_OFFSETS[x.value] === undefined) {
        a.error(x.pos, `reg() expects a register name: ${Object.keys(PT_REGS_OFFSETS).join(', ')}`);
        return null;
      }
      if (!a.probe.regs || a.probe.provider === 'rawtracepoint') {
        a.error(c.pos, `reg() can not be used with '${a.probe.provider}' probes`);
        return null;
      }
      return U64;
    },
    doc: { usage: '`reg("ip")`', note: 'a saved register of pt_regs contexts (x86-64 names)' },
  },
];
