/**
 * The bcc tools' subcommands (`bpfscope TOOL [args...]`): one entry per tool of the catalog (tools/catalog.ts), with
 * the catalog's summary, each loading its module lazily. They are part of COMMANDS (commands.ts) and are also the
 * whole of the tools' own CLI bundle, dist/bundle/tools.cjs (tools-main.ts), which the `bpfscope` launcher
 * (launch.ts) runs for these names instead of the full cli.cjs: a tool needs none of the exporter, agent, web UI or
 * flame graph code, which is ~40% of cli.cjs (scripts/bundle.mjs says how much each bundle holds).
 */
import type { CommandEntry } from './command-entry.js';

export const TOOL_COMMANDS: Record<string, CommandEntry> = {
  syscount: {
    summary: 'Summarize syscall counts and latencies.',
    load: async () => (await import('../tools/syscount.js')).main,
  },
  funccount: {
    summary: 'Count functions, tracepoints, and USDT probes',
    load: async () => (await import('../tools/funccount.js')).main,
  },
  funclatency: {
    summary: 'Time functions and print latency as a histogram',
    load: async () => (await import('../tools/funclatency.js')).main,
  },
  stackcount: {
    summary: 'Count events and their stack traces',
    load: async () => (await import('../tools/stackcount.js')).main,
  },
  vfsstat: {
    summary: 'Count some VFS calls.',
    load: async () => (await import('../tools/vfsstat.js')).main,
  },
  capable: {
    summary: 'Trace security capability checks',
    load: async () => (await import('../tools/capable.js')).main,
  },
  llcstat: {
    summary: 'Summarize cache references and misses by PID',
    load: async () => (await import('../tools/llcstat.js')).main,
  },
  filetop: {
    summary: 'File reads and writes by process',
    load: async () => (await import('../tools/filetop.js')).main,
  },
  cachestat: {
    summary: 'Count cache kernel function calls',
    load: async () => (await import('../tools/cachestat.js')).main,
  },
  ext4slower: {
    summary: 'Trace common ext4 file operations slower than a threshold',
    load: async () => (await import('../tools/ext4slower.js')).main,
  },
  opensnoop: {
    summary: 'Trace open() syscalls',
    load: async () => (await import('../tools/opensnoop.js')).main,
  },
  execsnoop: {
    summary: 'Trace exec() syscalls',
    load: async () => (await import('../tools/execsnoop.js')).main,
  },
  exitsnoop: {
    summary: 'Trace all process termination (exit, fatal signal)',
    load: async () => (await import('../tools/exitsnoop.js')).main,
  },
  threadsnoop: {
    summary: 'List new thread creation.',
    load: async () => (await import('../tools/threadsnoop.js')).main,
  },
  killsnoop: {
    summary: 'Trace signals issued by the kill() syscall',
    load: async () => (await import('../tools/killsnoop.js')).main,
  },
  tcpconnect: {
    summary: 'Trace TCP connects',
    load: async () => (await import('../tools/tcpconnect.js')).main,
  },
  tcpaccept: {
    summary: 'Trace TCP accepts',
    load: async () => (await import('../tools/tcpaccept.js')).main,
  },
  tcplife: {
    summary: 'Trace the lifespan of TCP sessions and summarize',
    load: async () => (await import('../tools/tcplife.js')).main,
  },
  bashreadline: {
    summary: 'Print entered bash commands from all running shells',
    load: async () => (await import('../tools/bashreadline.js')).main,
  },
  memleak: {
    summary: "Trace outstanding memory allocations that weren't freed.",
    load: async () => (await import('../tools/memleak.js')).main,
  },
  statsnoop: {
    summary: 'Trace stat() syscalls',
    load: async () => (await import('../tools/statsnoop.js')).main,
  },
  syncsnoop: {
    summary: 'Trace sync() and related syscalls',
    load: async () => (await import('../tools/syncsnoop.js')).main,
  },
  biolatency: {
    summary: 'Summarize block device I/O latency as a histogram',
    load: async () => (await import('../tools/biolatency.js')).main,
  },
  biopattern: {
    summary: 'Show block device I/O pattern.',
    load: async () => (await import('../tools/biopattern.js')).main,
  },
  biosnoop: {
    summary: 'Trace block I/O',
    load: async () => (await import('../tools/biosnoop.js')).main,
  },
  biotop: {
    summary: 'Block device (disk) I/O by process',
    load: async () => (await import('../tools/biotop.js')).main,
  },
  bitesize: {
    summary: 'Summarize block I/O size as a histogram, by process name',
    load: async () => (await import('../tools/bitesize.js')).main,
  },
  runqlat: {
    summary: 'Summarize run queue (scheduler) latency as a histogram',
    load: async () => (await import('../tools/runqlat.js')).main,
  },
  slabratetop: {
    summary: 'Kernel SLAB/SLUB memory cache allocation rate top',
    load: async () => (await import('../tools/slabratetop.js')).main,
  },
  pidpersec: {
    summary: 'Count new processes (via fork).',
    load: async () => (await import('../tools/pidpersec.js')).main,
  },
  runqslower: {
    summary: 'Trace high run queue latency',
    load: async () => (await import('../tools/runqslower.js')).main,
  },
  runqlen: {
    summary: 'Summarize scheduler run queue length as a histogram',
    load: async () => (await import('../tools/runqlen.js')).main,
  },
  cpudist: {
    summary: 'Summarize on- and off-CPU time per task as a histogram.',
    load: async () => (await import('../tools/cpudist.js')).main,
  },
  hardirqs: {
    summary: 'Summarize hard irq event time as histograms',
    load: async () => (await import('../tools/hardirqs.js')).main,
  },
  softirqs: {
    summary: 'Summarize soft irq event time as histograms.',
    load: async () => (await import('../tools/softirqs.js')).main,
  },
  oomkill: {
    summary: 'Trace the out-of-memory killer',
    load: async () => (await import('../tools/oomkill.js')).main,
  },
  profile: {
    summary: 'Profile CPU stack traces at a timed interval',
    load: async () => (await import('../tools/profile.js')).main,
  },
  offcputime: {
    summary: 'Summarize off-CPU time by stack trace',
    load: async () => (await import('../tools/offcputime.js')).main,
  },
  offwaketime: {
    summary: 'Summarize blocked time by kernel stack trace + waker stack',
    load: async () => (await import('../tools/offwaketime.js')).main,
  },
  wakeuptime: {
    summary: 'Summarize sleep to wakeup time by waker kernel stack',
    load: async () => (await import('../tools/wakeuptime.js')).main,
  },
  gethostlatency: {
    summary: 'Show latency for getaddrinfo/gethostbyname[2] calls',
    load: async () => (await import('../tools/gethostlatency.js')).main,
  },
  tcpretrans: {
    summary: 'Trace TCP retransmits',
    load: async () => (await import('../tools/tcpretrans.js')).main,
  },
  tcpdrop: {
    summary: 'Trace TCP drops by the kernel',
    load: async () => (await import('../tools/tcpdrop.js')).main,
  },
  trace: {
    summary: 'Attach to functions and print trace messages.',
    load: async () => (await import('../tools/trace.js')).main,
  },
  argdist: {
    summary: 'Trace a function and display a summary of its parameter values.',
    load: async () => (await import('../tools/argdist.js')).main,
  },
};
