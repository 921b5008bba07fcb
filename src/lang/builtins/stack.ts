/**
 * The stack builtins (bpftrace `docs/stdlib.md`): `kstack`/`ustack` and `kstack(mode, limit)`, stored, as current
 * bpftrace does, under a hash of the frames read with `bpf_get_stack` (codegen/gen.ts `stack()`), symbolized when
 * printed (runtime/stacks.ts); `len(kstack)` is in maps.ts with `len(@m)`.
 */
import type { BuiltinFunction, BuiltinVariable } from './types.js';

export const STACK_VARIABLES: readonly BuiltinVariable[] = [
  {
    name: 'kstack',
    ownFunction: true,
    doc: { usage: '`kstack`', note: 'distinct stacks never collide (a hash of the frames, not a stack id)' },
  },
  { name: 'ustack', ownFunction: true, doc: { usage: '`ustack`', note: 'as `kstack`' } },
];

export const STACK_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'kstack',
    doc: { usage: '`kstack([mode][, limit])`', note: 'modes `bpftrace`, `perf`, `raw`; limit at most 127 frames' },
  },
  { name: 'ustack', doc: { usage: '`ustack([mode][, limit])`', note: 'as `kstack(...)`' } },
];
