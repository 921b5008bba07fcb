/**
 * The time builtins (bpftrace `docs/stdlib.md`): `nsecs` / `nsecs(clock)` (bpf_ktime_get_*_ns), `elapsed` (since
 * bpfscope started the program), `jiffies`, `strftime(fmt, ns)` (formatted when printed: the `timestamp` type) and
 * `time([fmt])` (the wall time when user space handles the event).
 */
import { HELPER_ID as H } from '../../bpf/helpers.js';
import { typeName, U64 } from '../types.js';
import type { BuiltinFunction, BuiltinVariable } from './types.js';

/** The clocks of `nsecs(clock)` (bpftrace's TimestampMode). */
export const NSECS_CLOCKS: ReadonlySet<string> = new Set(['monotonic', 'boot', 'tai', 'sw_tai']);

export const TIME_VARIABLES: readonly BuiltinVariable[] = [
  {
    name: 'nsecs',
    type: U64,
    ownFunction: true,
    generate: (g) => g.callHelper(H.ktime_get_ns, []),
    doc: { usage: '`nsecs`', note: 'CLOCK_MONOTONIC, as bpftrace 0.17 (current bpftrace: boot time)' },
  },
  { name: 'elapsed', type: U64, doc: { usage: '`elapsed`', note: 'nanoseconds since the program started' } },
  { name: 'jiffies', type: U64, generate: (g) => g.callHelper(H.jiffies64, []), doc: { usage: '`jiffies`' } },
];

export const TIME_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'nsecs',
    arity: [0, 1],
    check(c, a) {
      const clock = c.args[0];
      if (clock && !(clock.kind === 'BuiltinExpr' && NSECS_CLOCKS.has(clock.name))) {
        a.error(clock.pos, `nsecs() expects a clock: ${[...NSECS_CLOCKS].join(', ')}`);
        return null;
      }
      return U64;
    },
    generate(c, g) {
      // monotonic: CLOCK_MONOTONIC; boot: CLOCK_BOOTTIME; tai (and sw_tai, bpftrace's fallback for kernels
      // without the helper): CLOCK_TAI
      const clock = (c.args[0] as { name?: string } | undefined)?.name ?? 'monotonic';
      const helper =
        clock === 'boot' ? H.ktime_get_boot_ns : clock === 'monotonic' ? H.ktime_get_ns : H.ktime_get_tai_ns;
      return g.callHelper(helper, []);
    },
    doc: {
      usage: '`nsecs(monotonic|boot|tai|sw_tai)`',
      note: '`sw_tai` reads CLOCK_TAI directly, which the helper offers on the kernels bpfscope supports',
    },
  },
  {
    name: 'strftime',
    arity: [2, 2],
    check(c, a) {
      const [fmt, ns] = c.args as [(typeof c.args)[0], (typeof c.args)[0]];
      if (fmt.kind !== 'StrLit') a.error(fmt.pos, 'strftime() expects a string literal format');
      const t = a.expr(ns);
      if (t && t.kind !== 'int') a.error(ns.pos, `strftime() expects an integer timestamp (${typeName(t)} provided)`);
      return { kind: 'timestamp', fmt: fmt.kind === 'StrLit' ? fmt.value : '' };
    },
    generate: (c, g) => g.scalar(c.args[1]!),
    doc: { usage: '`strftime(fmt, ns)`', note: 'formatted in user space when printed, as bpftrace' },
  },
  {
    name: 'time',
    role: 'statement',
    check(c, a) {
      if (c.args.length > 1 || (c.args.length === 1 && c.args[0]!.kind !== 'StrLit')) {
        a.error(c.pos, 'time() expects an optional string literal format');
      }
      return { kind: 'none' };
    },
    doc: { usage: '`time([fmt])`', note: 'the wall time at which user space handles the event' },
  },
];
