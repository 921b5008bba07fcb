/**
 * The stack builtins (bpftrace `docs/stdlib.md`): `kstack`/`ustack` and `kstack(mode, limit)`, stored, as current
 * bpftrace does, under a hash of the frames read with `bpf_get_stack` (codegen/gen-expr.ts `stack()`), symbolized when
 * printed (runtime/stacks.ts); `len(kstack)` is in maps.ts with `len(@m)`.
 */
import type { CallExpr } from '../ast.js';
import type { SType } from '../types.js';
import type { BuiltinChecker, BuiltinFunction, BuiltinVariable } from './types.js';

/** Frames kept by kstack/ustack without a limit, and the most allowed (the kernel's perf_event_max_stack default). */
export const DEFAULT_STACK_LIMIT = 127;
export const MAX_STACK_LIMIT = 127;

/** `kstack(mode)`, `kstack(limit)`, `kstack(mode, limit)` (bpftrace docs/stdlib.md). */
function stackCheck(c: CallExpr, a: BuiltinChecker): SType | null {
  let mode: 'bpftrace' | 'perf' | 'raw' = a.stackMode;
  let limit = DEFAULT_STACK_LIMIT;
  if (c.args.length > 2) {
    a.error(c.pos, `${c.name}() takes at most 2 arguments (${c.args.length} provided)`);
    return null;
  }
  c.args.forEach((x, i) => {
    if (x.kind === 'BuiltinExpr' && i === 0 && ['bpftrace', 'perf', 'raw'].includes(x.name)) {
      mode = x.name as typeof mode;
      return;
    }
    const n = a.constValue(x);
    if (n === null) {
      a.error(
        x.pos,
        `${c.name}: invalid ${i === 0 ? 'mode or limit' : 'limit'} (expected bpftrace, perf, raw or an integer)`,
      );
      return;
    }
    if (n < 0n || n > BigInt(MAX_STACK_LIMIT)) {
      a.error(x.pos, `${c.name}: limit must be between 0 and ${MAX_STACK_LIMIT}`);
      return;
    }
    limit = Number(n);
  });
  return { kind: c.name as 'kstack' | 'ustack', limit, mode };
}

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
    check: stackCheck,
    doc: { usage: '`kstack([mode][, limit])`', note: 'modes `bpftrace`, `perf`, `raw`; limit at most 127 frames' },
  },
  { name: 'ustack', check: stackCheck, doc: { usage: '`ustack([mode][, limit])`', note: 'as `kstack(...)`' } },
];
