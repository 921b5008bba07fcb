/**
 * `bpfscope exporter` decoders on live kernel values, one exporter with one config counting three workloads of the
 * test (each a private copy of a system binary, so its command name is the test's own):
 * - `cgroup`: the test makes a cgroup v2 directory of its own and runs a copy of dd inside it; its write() calls are
 *   counted by `cgroup` (the cgroup v2 id), which the decoder must turn into that directory's path, with the exact
 *   count of writes. The cgroup v2 mount is found from /proc/self/mountinfo here too (/sys/fs/cgroup on a v2 host,
 *   /sys/fs/cgroup/unified on a hybrid one such as this VM, whose v1 hierarchies hold other inode numbers).
 * - `ifname`: the test creates a veth pair with names of its own (no ARP, an address of the 198.18.0.0/15 benchmark
 *   range), and a copy of bash sends UDP datagrams to the peer's side through it; the packets leaving the device
 *   (`rawtracepoint:net_dev_start_xmit`, `args.dev->ifindex`) are counted by interface index, which the decoder
 *   must turn into the interface's name, with the exact number of datagrams.
 * - `ksym`: a copy of sleep sleeps twice; `tracepoint:timer:hrtimer_start` counts its timers by `args.function`,
 *   the kernel function the timer will call: a nanosleep's timer is always `hrtimer_wakeup` (kernel/time/hrtimer.c,
 *   hrtimer_init_sleeper), which the decoder must name from the raw address.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe as suite, test } from 'node:test';
import { bpfscopeSkipReason, type RunningTool, startTool } from '../helpers/cli.js';

const TAG = (process.pid % 0x10000).toString(16);
const COMM = `bpfs_cg${TAG}`;
const WRITES = 7;
const IF_COMM = `bpfs_if${TAG}`;
const IF_NAME = `bpfsv${TAG}a`;
const IF_PEER = `bpfsv${TAG}b`;
/** 198.18.X.Y/30 from the pid: the test's own /30 in the benchmark range (RFC 2544), not routed anywhere else. */
const NET = `198.18.${(process.pid >> 6) & 0xff}.${(process.pid & 0x3f) << 2}`;
const PEER_IP = NET.replace(/\d+$/, (d) => String(Number(d) + 2));
const DATAGRAMS = 5;
const SLEEP_COMM = `bpfs_sl${TAG}`;
const SLEEPS = 2;

function cgroup2Mount(): string | undefined {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep >= 0 && line.slice(sep + 3).startsWith('cgroup2 ')) return line.slice(0, sep).split(' ')[4];
  }
  return undefined;
}

const mount = cgroup2Mount();
const ipSkip = spawnSync('ip', ['-V']).status === 0 ? undefined : 'no ip command (iproute2)';
const skip = bpfscopeSkipReason() ?? (mount ? undefined : 'no cgroup v2 mount') ?? ipSkip;

const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8' });

suite('bpfscope exporter: decoders on live values', { skip }, () => {
  let dir = '';
  let cg = '';
  let exporter: RunningTool | undefined;
  let vethSkip: string | undefined;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-exporter-dec-'));
    chmodSync(dir, 0o755);
    cg = join(mount!, `bpfscope-test-${process.pid}`);
    mkdirSync(cg);
    for (const [bin, name] of [
      ['dd', COMM],
      ['bash', IF_COMM],
      ['sleep', SLEEP_COMM],
    ] as const) {
      copyFileSync(execFileSync('sh', ['-c', `command -v ${bin}`], { encoding: 'utf8' }).trim(), join(dir, name));
      chmodSync(join(dir, name), 0o755);
    }
    try {
      ip('link', 'add', IF_NAME, 'type', 'veth', 'peer', 'name', IF_PEER);
      ip('link', 'set', IF_NAME, 'arp', 'off', 'up');
      ip('link', 'set', IF_PEER, 'up');
      ip('addr', 'add', `${NET.replace(/\d+$/, (d) => String(Number(d) + 1))}/30`, 'dev', IF_NAME);
    } catch (e) {
      vethSkip = `cannot make a veth pair: ${(e as Error).message.split('\n')[0]}`;
    }
    writeFileSync(
      join(dir, 'cg.yaml'),
      `metrics:
  counters:
    - name: cg_writes_total
      help: write() calls of the test workload by cgroup
      labels:
        - name: cgroup
          decoders:
            - name: cgroup
    - name: if_xmit_total
      help: packets of the test workload leaving a network device, by device
      labels:
        - name: device
          decoders:
            - name: ifname
    - name: timer_starts_total
      help: hrtimers started by the test workload, by the function they call
      labels:
        - name: function
          decoders:
            - name: ksym
program: |
  tracepoint:syscalls:sys_enter_write /comm == "${COMM}"/ { @cg_writes_total[cgroup] = count(); }
  rawtracepoint:net_dev_start_xmit /comm == "${IF_COMM}"/ { @if_xmit_total[args.dev->ifindex] = count(); }
  tracepoint:timer:hrtimer_start /comm == "${SLEEP_COMM}"/ { @timer_starts_total[args.function] = count(); }
`,
    );
  });

  after(async () => {
    if (exporter) {
      exporter.signal('SIGTERM');
      await exporter.done;
    }
    if (cg) rmdirSync(cg); // empty again: the workload has exited
    spawnSync('ip', ['link', 'del', IF_NAME]); // the peer goes with it
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let port = '';

  /** The exporter, started by the first test to need it (each test runs alone too); resolves once it listens. */
  async function listening(): Promise<void> {
    exporter ??= startTool(
      'bpfscope',
      ['exporter', `--config.dir=${dir}`, '--config.names=cg', '--web.listen-address=127.0.0.1:0'],
      { timeoutMs: 240_000 },
    );
    assert.ok(await exporter.waitFor(/^Listening on /m, 120_000), exporter.stderr());
    port = /Listening on 127\.0\.0\.1:(\d+)\/metrics/.exec(exporter.stderr())![1]!;
  }

  /** The lines of metric `ebpf_exporter_NAME` in a scrape. */
  async function scrape(name: string): Promise<string[]> {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return text.split('\n').filter((l) => l.startsWith(`ebpf_exporter_${name}{`));
  }

  test('cgroup: the id of a process in a cgroup of the test is decoded as that directory, count exact', async () => {
    await listening();
    // the shell moves itself into the cgroup, then becomes the workload: WRITES writes of one byte
    execFileSync('sh', [
      '-c',
      `echo $$ > ${cg}/cgroup.procs && exec ${join(dir, COMM)} if=/dev/zero of=/dev/null bs=1 count=${WRITES} status=none`,
    ]);
    assert.deepEqual(await scrape('cg_writes_total'), [`ebpf_exporter_cg_writes_total{cgroup="${cg}"} ${WRITES}`]);
  });

  test('ifname: the index of a veth device of the test is decoded as its name, count exact', async (t) => {
    if (vethSkip) return t.skip(vethSkip);
    await listening();
    // bash's /dev/udp: one connected UDP socket and one datagram per redirection, sent from bash's own context
    execFileSync(join(dir, IF_COMM), ['-c', `for i in {1..${DATAGRAMS}}; do echo x > /dev/udp/${PEER_IP}/9; done`]);
    assert.deepEqual(await scrape('if_xmit_total'), [`ebpf_exporter_if_xmit_total{device="${IF_NAME}"} ${DATAGRAMS}`]);
  });

  test('ksym: the function of a nanosleep timer is decoded as hrtimer_wakeup, count exact', async () => {
    await listening();
    for (let i = 0; i < SLEEPS; i++) execFileSync(join(dir, SLEEP_COMM), ['0.01']);
    const lines = await scrape('timer_starts_total');
    assert.ok(
      lines.includes(`ebpf_exporter_timer_starts_total{function="hrtimer_wakeup"} ${SLEEPS}`),
      lines.join('\n'),
    );
    // the kernel may arm its own timers while the copy of sleep is current (the tick, deadline or perf timers on a
    // busy machine): those are counted too, and must be decoded to function names as well, never left as addresses
    for (const l of lines) assert.match(l, /^ebpf_exporter_timer_starts_total\{function="[A-Za-z_][\w.]*"\} \d+$/);
  });
});
