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

const MODES = ['bpftrace', 'perf', 'raw', 'build_id'];

/**
 * `kstack(mode)`, `kstack(limit)`, `kstack(mode, limit)` (bpftrace docs/stdlib.md). `build_id` is for ustack only:
 * `kstack(build_id)` is an error and a `stack_mode = build_id` config makes a bare kstack `raw` with a warning (as
 * bpftrace's type resolver does).
 */
function stackCheck(c: CallExpr, a: BuiltinChecker): SType | null {
  let mode: 'bpftrace' | 'perf' | 'raw' | 'build_id' = a.stackMode;
  let limit = DEFAULT_STACK_LIMIT;
  let defaulted = true;
  if (c.args.length > 2) {
    a.error(c.pos, `${c.name}() takes at most 2 arguments (${c.args.length} provided)`);
    return null;
  }
  c.args.forEach((x, i) => {
    if (x.kind === 'BuiltinExpr' && i === 0 && MODES.includes(x.name)) {
      mode = x.name as typeof mode;
      defaulted = false;
      if (mode === 'build_id' && c.name === 'kstack')
        a.error(x.pos, "'build_id' stack mode can only be used for ustack");
      return;
    }
    const n = a.constValue(x);
    if (n === null) {
      a.error(
        x.pos,
        `${c.name}: invalid ${i === 0 ? 'mode or limit' : 'limit'} (expected bpftrace, perf, raw, build_id or an integer)`,
      );
      return;
    }
    if (n < 0n || n > BigInt(MAX_STACK_LIMIT)) {
      a.error(x.pos, `${c.name}: limit must be between 0 and ${MAX_STACK_LIMIT}`);
      return;
    }
    limit = Number(n);
  });
  if (c.name === 'ustack') return { kind: 'ustack', limit, mode };
  if (mode === 'build_id') {
    if (defaulted) a.warn(c.pos, "'build_id' stack mode can only be used for ustack. Falling back to 'raw' mode.");
    return { kind: 'kstack', limit, mode: 'raw' };
  }
  return { kind: 'kstack', limit, mode };
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
    doc: {
      usage: '`kstack([mode][, limit])`',
      note: 'modes `bpftrace`, `perf`, `raw` (`ustack` also `build_id`); limit at most 127 frames',
    },
  },
  { name: 'ustack', check: stackCheck, doc: { usage: '`ustack([mode][, limit])`', note: 'as `kstack(...)`' } },
];
