import assert from 'node:assert/strict';
import { readdirSync, readlinkSync } from 'node:fs';
import { test } from 'node:test';
import { elfEntryFileOffset, features, hasFeature, hasHelper, resetFeatureCache } from '../../src/kernel/features.js';

/** This process's open BPF objects and perf events, by kind (anon inode names in /proc/self/fd). */
function bpfFds(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    const m = /^anon_inode:(bpf-\w+|\[perf_event\])/.exec(target);
    if (m) out[m[1]!] = (out[m[1]!] ?? 0) + 1;
  }
  return out;
}

// What the development kernel (Linux 6.18, no CONFIG_KPROBES, fentry refused) offers, per KERNEL.md.
test('feature probes on this kernel', () => {
  const before = bpfFds();
  const f = features();
  assert.deepEqual(f, {
    ringbuf: true,
    tracepoint: true,
    rawTracepoint: true,
    rawTracepointTestRun: true,
    tpBtf: true,
    kprobe: false,
    kprobeMulti: false,
    fentry: false,
    uprobe: true,
    uprobeMulti: true,
    perfLink: true,
    batchOps: true,
    btf: true,
  });
  // The probes leave no program, map, link or perf event open in this process.
  assert.deepEqual(bpfFds(), before);
});

test('results are cached per process', () => {
  resetFeatureCache();
  const t0 = performance.now();
  assert.equal(hasFeature('ringbuf'), true);
  const first = performance.now() - t0;
  const t1 = performance.now();
  for (let i = 0; i < 1000; i++) hasFeature('ringbuf');
  assert.ok(performance.now() - t1 < first * 100 + 5);
});

test('helper probes tell unknown helpers from known ones', () => {
  // probe_read_kernel (113) exists for tracepoint programs; helper 9999 does not exist at all.
  assert.equal(hasHelper(5, 113), true);
  assert.equal(hasHelper(5, 9999), false);
  // skb_store_bytes (9) exists but tracepoint programs may not use it.
  assert.equal(hasHelper(5, 9), false);
});

test('elfEntryFileOffset maps e_entry through its PT_LOAD segment', () => {
  const off = elfEntryFileOffset('/bin/true');
  assert.ok(off !== undefined && off > 0n);
  assert.equal(elfEntryFileOffset('/etc/hostname'), undefined);
  assert.equal(elfEntryFileOffset('/nonexistent'), undefined);
});
