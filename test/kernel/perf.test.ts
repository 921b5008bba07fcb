import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { BpfMap, MapType } from '../../src/bpf/map.js';
import { type LoadedProgram, loadProgram, ProgType } from '../../src/bpf/program.js';
import { BpfscopeError, KernelError } from '../../src/errors.js';
import { onlineCpus } from '../../src/kernel/cpus.js';
import { elfEntryFileOffset } from '../../src/kernel/features.js';
import {
  encodePerfEventAttr,
  openProbeEvent,
  openSoftwareEvent,
  openTracepoint,
  PERF_ATTR_SIZE,
  PerfFlag,
  PerfType,
  parsePmuFormatBit,
  probePmu,
  SwEvent,
} from '../../src/kernel/perf.js';
import { systemTracefs } from '../../src/kernel/tracefs.js';
import { call, exit, H, incrementArray0, jneImm, movImm, prog, rshImm } from './raw-insns.js';

test('perf_event_attr encoding: offsets of include/uapi/linux/perf_event.h', () => {
  const a = encodePerfEventAttr({
    type: PerfType.SOFTWARE,
    config: 3n,
    sampleFreq: 99n,
    flags: PerfFlag.DISABLED,
    wakeupEvents: 1,
    config1: 0x1122n,
    config2: 0x3344n,
  });
  assert.equal(a.length, 144);
  assert.equal(PERF_ATTR_SIZE, 144);
  assert.equal(a.readUInt32LE(0), 1);
  assert.equal(a.readUInt32LE(4), 144);
  assert.equal(a.readBigUInt64LE(8), 3n);
  assert.equal(a.readBigUInt64LE(16), 99n);
  assert.equal(a.readBigUInt64LE(40), (1n << 10n) | 1n); // freq + disabled
  assert.equal(a.readUInt32LE(48), 1);
  assert.equal(a.readBigUInt64LE(56), 0x1122n);
  assert.equal(a.readBigUInt64LE(64), 0x3344n);
  const b = encodePerfEventAttr({ type: PerfType.TRACEPOINT, config: 42n, samplePeriod: 1n });
  assert.equal(b.readBigUInt64LE(16), 1n);
  assert.equal(b.readBigUInt64LE(40), 0n);
});

test('PMU format bits', () => {
  assert.equal(parsePmuFormatBit('config:0\n'), 0);
  assert.equal(parsePmuFormatBit('config:32-63\n'), 32);
  assert.throws(() => parsePmuFormatBit('config1:0-63'), BpfscopeError);
  const up = probePmu('uprobe');
  assert.ok(up);
  assert.equal(up.type, Number(readFileSync('/sys/bus/event_source/devices/uprobe/type', 'utf8')));
  assert.equal(up.retprobeBit, 0);
  assert.equal(up.refCtrShift, 32);
});

/** A program of `type` that counts calls made by this process (tgid filter) in slot 0 of an ARRAY map. */
function counter(type: number, name: string, tgidOnly = true): { map: BpfMap; prog: LoadedProgram; count(): bigint } {
  const map = BpfMap.create({ type: MapType.ARRAY, keySize: 4, valueSize: 8, maxEntries: 1, name });
  const filter = tgidOnly ? [call(H.getCurrentPidTgid), rshImm(0, 32), jneImm(0, process.pid, 9)] : [];
  const p = loadProgram({ type, name, insns: prog(...filter, incrementArray0(map.fd), movImm(0, 0), exit()) });
  return { map, prog: p, count: () => map.lookup(Buffer.alloc(4))!.readBigUInt64LE() };
}

/** ids of programs attached to perf events held by this process (bpftool perf show). */
function attachedHere(): number[] {
  const all = JSON.parse(execFileSync('bpftool', ['-j', 'perf', 'show'], { encoding: 'utf8' }) || '[]') as {
    pid: number;
    prog_id: number;
  }[];
  return all.filter((e) => e.pid === process.pid).map((e) => e.prog_id);
}

for (const mode of ['link', 'ioctl'] as const) {
  test(`tracepoint syscalls:sys_enter_getppid counts exactly N calls (${mode} attach)`, () => {
    const id = systemTracefs().eventId('syscalls', 'sys_enter_getppid');
    const c = counter(ProgType.TRACEPOINT, `perf_tp_${mode}`);
    const ev = openTracepoint(id);
    try {
      ev.attach(c.prog.fd, 0n, { forceIoctl: mode === 'ioctl' });
      assert.equal(ev.attachMode, mode);
      assert.deepEqual(attachedHere(), [c.prog.info().id]);
      const N = 1234;
      let sum = 0;
      for (let i = 0; i < N; i++) sum += process.ppid; // each read is one getppid(2)
      assert.ok(sum > 0);
      assert.equal(c.count(), BigInt(N));
    } finally {
      ev.close();
      c.prog.close();
      c.map.close();
    }
    assert.deepEqual(attachedHere(), [], 'closing the event detaches the program');
  });
}

/** CPU time of this thread (the main thread), ns, from /proc/self/task/TID/schedstat. */
function threadCpuNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
}

test('software event task-clock on this task samples once per ms of its CPU time', () => {
  const c = counter(ProgType.PERF_EVENT, 'perf_sw_task', false);
  const ev = openSoftwareEvent(SwEvent.TASK_CLOCK, { samplePeriod: 1_000_000n }, { pid: process.pid, cpu: -1 });
  try {
    ev.attach(c.prog.fd);
    const t0 = threadCpuNs();
    let x = 0;
    while (threadCpuNs() - t0 < 100e6) for (let i = 0; i < 1e5; i++) x += i;
    ev.disable();
    assert.ok(x > 0);
    const ms = (threadCpuNs() - t0) / 1e6;
    const n = Number(c.count());
    // within 3 samples or 10% (a loaded VM delays hrtimer-driven samples)
    assert.ok(Math.abs(n - ms) <= Math.max(3, ms * 0.1), `${n} samples for ${ms.toFixed(1)} ms of CPU`);
  } finally {
    ev.close();
    c.prog.close();
    c.map.close();
  }
});

test('software event cpu-clock per CPU at a frequency (profile)', async () => {
  const c = counter(ProgType.PERF_EVENT, 'perf_sw_cpu', false);
  const evs = onlineCpus().map((cpu) => openSoftwareEvent(SwEvent.CPU_CLOCK, { sampleFreq: 997n }, { cpu }));
  try {
    const t0 = process.hrtime.bigint();
    for (const ev of evs) ev.attach(c.prog.fd);
    await new Promise((r) => setTimeout(r, 200));
    const n = Number(c.count());
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    // ~997 Hz on each CPU, busy or idle (cpu-clock ticks in idle too): at least a quarter of that (the kernel's
    // frequency mode starts from a guessed period and adapts, and a loaded VM delays hrtimers: 196 for 200 expected
    // at half the rate was seen under load), at most twice.
    const expected = 997 * s * evs.length;
    assert.ok(n >= expected / 4 && n <= expected * 2, `${n} samples in ${s.toFixed(3)} s on ${evs.length} CPUs`);
  } finally {
    for (const ev of evs) ev.close();
    c.prog.close();
    c.map.close();
  }
});

test('uprobe PMU event on an ELF entry point counts each run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bpfscope-perf-'));
  const bin = join(dir, 'true');
  copyFileSync('/bin/true', bin);
  const offset = elfEntryFileOffset(bin);
  assert.ok(offset !== undefined);
  const c = counter(ProgType.KPROBE, 'perf_uprobe', false);
  const ev = openProbeEvent({ kind: 'uprobe', target: bin, offset });
  try {
    ev.attach(c.prog.fd);
    for (let i = 0; i < 3; i++) assert.equal(spawnSync(bin).status, 0);
    assert.equal(c.count(), 3n);
    // A return probe on the same place opens and attaches too (the entry point never returns: no hits).
    const ret = openProbeEvent({ kind: 'uprobe', retprobe: true, target: bin, offset });
    ret.attach(c.prog.fd);
    assert.equal(ret.attachMode, 'link');
    ret.close();
    // A missing file is a clear error.
    assert.throws(
      () => openProbeEvent({ kind: 'uprobe', target: join(dir, 'missing'), offset }),
      (e: unknown) =>
        e instanceof KernelError &&
        /^cannot attach uprobe .*\/missing\+0x[0-9a-f]+: .*\/missing does not exist$/.test(e.message),
    );
  } finally {
    ev.close();
    c.prog.close();
    c.map.close();
    rmSync(dir, { recursive: true });
  }
});

test('kprobe events need the kprobe PMU (absent on kernels without CONFIG_KPROBES)', () => {
  if (probePmu('kprobe')) {
    openProbeEvent({ kind: 'kprobe', target: 'vfs_read' }).close();
    return;
  }
  assert.throws(
    () => openProbeEvent({ kind: 'kprobe', target: 'vfs_read' }),
    (e: unknown) => e instanceof BpfscopeError && /no kprobe PMU/.test(e.message),
  );
});
