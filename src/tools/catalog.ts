/**
 * The bcc tools bpfscope provides, with one line each (bcc's own description of the tool), for `bpfscope tools`.
 * Each name is also registered in `cli/commands.ts`'s COMMANDS table with the same summary (a test checks it).
 */
export interface ToolInfo {
  name: string;
  summary: string;
}

export const TOOLS: readonly ToolInfo[] = [
  { name: 'argdist', summary: 'Trace a function and display a summary of its parameter values.' },
  { name: 'bashreadline', summary: 'Print entered bash commands from all running shells' },
  { name: 'biolatency', summary: 'Summarize block device I/O latency as a histogram' },
  { name: 'biopattern', summary: 'Show block device I/O pattern.' },
  { name: 'biosnoop', summary: 'Trace block I/O' },
  { name: 'biotop', summary: 'Block device (disk) I/O by process' },
  { name: 'bitesize', summary: 'Summarize block I/O size as a histogram, by process name' },
  { name: 'cachestat', summary: 'Count cache kernel function calls' },
  { name: 'capable', summary: 'Trace security capability checks' },
  { name: 'cpudist', summary: 'Summarize on- and off-CPU time per task as a histogram.' },
  { name: 'execsnoop', summary: 'Trace exec() syscalls' },
  { name: 'exitsnoop', summary: 'Trace all process termination (exit, fatal signal)' },
  { name: 'ext4slower', summary: 'Trace common ext4 file operations slower than a threshold' },
  { name: 'filetop', summary: 'File reads and writes by process' },
  { name: 'funccount', summary: 'Count functions, tracepoints, and USDT probes' },
  { name: 'funclatency', summary: 'Time functions and print latency as a histogram' },
  { name: 'gethostlatency', summary: 'Show latency for getaddrinfo/gethostbyname[2] calls' },
  { name: 'hardirqs', summary: 'Summarize hard irq event time as histograms' },
  { name: 'killsnoop', summary: 'Trace signals issued by the kill() syscall' },
  { name: 'llcstat', summary: 'Summarize cache references and misses by PID' },
  { name: 'memleak', summary: "Trace outstanding memory allocations that weren't freed." },
  { name: 'offcputime', summary: 'Summarize off-CPU time by stack trace' },
  { name: 'offwaketime', summary: 'Summarize blocked time by kernel stack trace + waker stack' },
  { name: 'oomkill', summary: 'Trace the out-of-memory killer' },
  { name: 'opensnoop', summary: 'Trace open() syscalls' },
  { name: 'pidpersec', summary: 'Count new processes (via fork).' },
  { name: 'profile', summary: 'Profile CPU stack traces at a timed interval' },
  { name: 'runqlat', summary: 'Summarize run queue (scheduler) latency as a histogram' },
  { name: 'runqlen', summary: 'Summarize scheduler run queue length as a histogram' },
  { name: 'runqslower', summary: 'Trace high run queue latency' },
  { name: 'slabratetop', summary: 'Kernel SLAB/SLUB memory cache allocation rate top' },
  { name: 'softirqs', summary: 'Summarize soft irq event time as histograms.' },
  { name: 'stackcount', summary: 'Count events and their stack traces' },
  { name: 'statsnoop', summary: 'Trace stat() syscalls' },
  { name: 'syncsnoop', summary: 'Trace sync() and related syscalls' },
  { name: 'syscount', summary: 'Summarize syscall counts and latencies.' },
  { name: 'tcpaccept', summary: 'Trace TCP accepts' },
  { name: 'tcpconnect', summary: 'Trace TCP connects' },
  { name: 'tcpdrop', summary: 'Trace TCP drops by the kernel' },
  { name: 'tcplife', summary: 'Trace the lifespan of TCP sessions and summarize' },
  { name: 'tcpretrans', summary: 'Trace TCP retransmits' },
  { name: 'threadsnoop', summary: 'List new thread creation.' },
  { name: 'trace', summary: 'Attach to functions and print trace messages.' },
  { name: 'vfsstat', summary: 'Count some VFS calls.' },
  { name: 'wakeuptime', summary: 'Summarize sleep to wakeup time by waker kernel stack' },
];

/** `bpfscope tools`: one line per tool, `NAME  SUMMARY` with the names padded to one column. */
export function formatToolList(tools: readonly ToolInfo[] = TOOLS): string {
  const width = Math.max(...tools.map((t) => t.name.length));
  return tools.map((t) => `${t.name.padEnd(width)}  ${t.summary}\n`).join('');
}

/**
 * Entry point of `bpfscope tools`: the tools, then (after an empty line and `Other commands:`) `others`, the
 * subcommands that are not tools (flame graph utilities; the command line's registry passes them).
 */
export async function main(argv: string[], others: readonly ToolInfo[] = []): Promise<number> {
  if (argv.length && (argv[0] === '-h' || argv[0] === '--help')) {
    process.stdout.write(
      'usage: bpfscope tools\n\nList the bcc tools and the other commands bpfscope provides; run one with bpfscope NAME [-h].\n',
    );
    return 0;
  }
  process.stdout.write(formatToolList());
  if (others.length) process.stdout.write(`\nOther commands:\n${formatToolList(others)}`);
  return 0;
}
