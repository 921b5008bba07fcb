/**
 * bpftrace v0.26 builtins (`docs/stdlib.md`) bpfscope does not implement: using one says so ("does not support
 * yet") instead of "Unknown function"/"Unknown identifier". `impossible` ones cannot work on the kernels bpfscope
 * targets; their note says why. `pid`/`tid` with a wrong argument are caught by their own check.
 */
import type { BuiltinFunction, BuiltinVariable } from './types.js';

const notYet = (name: string): BuiltinFunction => ({ name, status: 'not yet', doc: { usage: `\`${name}()\`` } });

export const NOT_YET_FUNCTIONS: readonly BuiltinFunction[] = [
  notYet('assert_str'),
  notYet('fail'),
  notYet('find'),
  notYet('is_array'),
  notYet('is_integer'),
  notYet('is_literal'),
  notYet('is_ptr'),
  notYet('is_str'),
  notYet('is_unsigned_integer'),
  notYet('kfunc_allowed'),
  notYet('kfunc_exist'),
  notYet('memcmp'),
  notYet('signal_thread'),
  notYet('skboutput'),
  notYet('static_assert'),
  notYet('str_concat'),
  notYet('strcap'),
  notYet('strstr'),
  notYet('unwatch'),
  {
    name: 'override',
    status: 'impossible',
    doc: {
      usage: '`override(rc)`',
      note: 'neither test kernel has CONFIG_BPF_KPROBE_OVERRIDE (function error injection), which `bpf_override_return` needs',
    },
  },
];

const notYetVariable = (name: string): BuiltinVariable => ({ name, status: 'not yet', doc: { usage: `\`${name}\`` } });

export const NOT_YET_VARIABLES: readonly BuiltinVariable[] = [
  notYetVariable('dw_ustack'),
  notYetVariable('default_str_length'),
  { name: 'sargN', pattern: /^sarg[0-9]+$/, status: 'not yet', doc: { usage: '`sarg0`..`sargN`' } },
];
