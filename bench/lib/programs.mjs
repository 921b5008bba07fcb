/**
 * The bpftrace programs the benchmarks run, identical text for bpfscope and bpftrace 0.17 (so only syntax both accept:
 * no `args.x`, which 0.17 spells `args->x`).
 */

const TEN = ['read', 'write', 'openat', 'close', 'newfstat', 'mmap', 'ioctl', 'getppid', 'nanosleep', 'futex'];

/**
 * Startup programs (issue 4, item 2). `exits`: the program ends by itself; otherwise the bench sends SIGINT once the
 * probes are live. `probes`: how many tracepoints it attaches.
 */
export const STARTUP = [
  { id: 'begin_exit', title: '`BEGIN { exit(); }`', exits: true, probes: 0, program: 'BEGIN { exit(); }' },
  {
    id: 'count_openat',
    title: 'count on sys_enter_openat',
    probes: 1,
    program: 'tracepoint:syscalls:sys_enter_openat { @ = count(); }',
  },
  {
    id: 'read_latency',
    title: 'read latency hist (tid-keyed start map)',
    probes: 2,
    program:
      'tracepoint:syscalls:sys_enter_read { @start[tid] = nsecs; } ' +
      'tracepoint:syscalls:sys_exit_read /@start[tid]/ { @ns = hist(nsecs - @start[tid]); delete(@start[tid]); }',
  },
  {
    id: 'ten_probes',
    title: '10 probes',
    probes: 10,
    program: TEN.map((s) => `tracepoint:syscalls:sys_enter_${s} { @[probe] = count(); }`).join(' '),
  },
];

const GETPPID = 'tracepoint:syscalls:sys_enter_getppid';
const MINE = '/pid == cpid/';

/**
 * Per-event overhead programs (issue 4, item 3), each filtered to the workload by pid (`-c` makes it `cpid`), for
 * both tools alike. `unfiltered_empty` is the attach floor without the filter; `empty` (with the filter) is the
 * floor the other programs are compared with.
 */
export const OVERHEAD = [
  { id: 'unfiltered_empty', title: 'empty probe, no filter', program: `${GETPPID} { }` },
  { id: 'empty', title: 'empty probe (floor)', program: `${GETPPID} ${MINE} { }` },
  { id: 'count', title: '`@ = count()`', program: `${GETPPID} ${MINE} { @ = count(); }` },
  { id: 'count_tid', title: '`@[tid] = count()`', program: `${GETPPID} ${MINE} { @[tid] = count(); }` },
  { id: 'hist', title: '`@ = hist(nsecs & 0xfffff)`', program: `${GETPPID} ${MINE} { @ = hist(nsecs & 0xfffff); }` },
  {
    id: 'latency',
    title: 'enter/exit latency hist via `@start[tid]`',
    program:
      `${GETPPID} ${MINE} { @start[tid] = nsecs; } ` +
      'tracepoint:syscalls:sys_exit_getppid /@start[tid]/ { @ns = hist(nsecs - @start[tid]); delete(@start[tid]); }',
  },
  {
    id: 'comm_raw',
    title: '`@[comm] = count()` on raw_syscalls:sys_enter',
    program: `tracepoint:raw_syscalls:sys_enter ${MINE} { @[comm] = count(); }`,
  },
];

/** Event streaming (issue 4, item 4): printf of two integers per event. */
export const STREAM_PROGRAM = `${GETPPID} ${MINE} { printf("%d %d\\n", tid, nsecs); }`;
/**
 * The same printf eight times per traced call (an unrolled loop): one getppid call cannot produce events faster than
 * ~1.3 M/s on this VM (bench/results/perf-issue13.md, Part 5), so this is how a reader's own ceiling is reached.
 */
export const STREAM8_PROGRAM = `${GETPPID} ${MINE} { unroll(8) { printf("%d %d\\n", tid, nsecs); } }`;

/** Memory under load (issue 4, item 5): the read latency program. */
export const LATENCY_PROGRAM = STARTUP[2].program;
