/**
 * bcc probe specifiers (src/tools/framework/probespec.ts): parsing as bcc's funccount/stackcount `Probe` and
 * trace's specifiers do, bcc's glob → regex conversion and match semantics, uprobe de-duplication by address,
 * bpftrace attach points, and library resolution against this machine's libc and the test workload.
 */
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  findLibrary,
  globToBccRegex,
  matchTargets,
  parseProbeSpec,
  ProbeSpecError,
  probeLimit,
  returnSpec,
  toAttachPoint,
  verifyLimit,
} from '../../../src/tools/framework/probespec.js';
import { workloadPath } from '../../helpers/workload.js';

const lib = (name: string) => (name === 'c' ? '/lib/libc.so.6' : name.startsWith('/') ? name : undefined);

describe('parseProbeSpec', () => {
  it('reads bcc forms', () => {
    const p = (t: string, o = {}) => parseProbeSpec(t, { findLibrary: lib, ...o });
    assert.deepEqual(p('vfs_*'), { text: 'vfs_*', kind: 'kprobe', pattern: 'vfs_*', regex: '^vfs_.*$' });
    assert.equal(p('p::vfs_read').kind, 'kprobe');
    assert.deepEqual(p('c:malloc'), {
      text: 'c:malloc',
      kind: 'uprobe',
      library: 'c',
      path: '/lib/libc.so.6',
      pattern: 'malloc',
      regex: '^malloc$',
    });
    assert.equal(p('p:c:malloc').path, '/lib/libc.so.6');
    assert.equal(p('/bin/x:read*').path, '/bin/x');
    assert.deepEqual(p('t:sched:sched_*'), {
      text: 't:sched:sched_*',
      kind: 'tracepoint',
      pattern: 'sched:sched_*',
      regex: '^sched:sched_.*$',
    });
    const u = p('u:c:setjmp');
    assert.equal(u.kind, 'usdt');
    assert.equal(u.pattern, 'setjmp');
    assert.equal(p('u:c:libc:setjmp').pattern, 'libc:setjmp');
    assert.equal(p('-r', { regexp: true }).regex, '-r');
    assert.equal(p('^vfs_(read|write)$', { regexp: true }).regex, '^vfs_(read|write)$');
  });

  it('return probes only when allowed', () => {
    const r = parseProbeSpec('r::vfs_read', { allowReturn: true, findLibrary: lib });
    assert.equal(r.kind, 'kretprobe');
    assert.equal(parseProbeSpec('r:c:malloc', { allowReturn: true, findLibrary: lib }).kind, 'uretprobe');
    assert.equal(parseProbeSpec('::vfs_read', { allowReturn: true, findLibrary: lib }).kind, 'kprobe');
    assert.throws(
      () => parseProbeSpec('r::vfs_read', { findLibrary: lib }),
      new ProbeSpecError("Type must be 'p', 't', or 'u', but got r"),
    );
    assert.throws(
      () => parseProbeSpec('x::f', { allowReturn: true, findLibrary: lib }),
      new ProbeSpecError("Type must be 'p', 'r', 't', or 'u', but got x"),
    );
  });

  it("bcc's errors", () => {
    assert.throws(
      () => parseProbeSpec('p:a:b:c', { findLibrary: lib }),
      new ProbeSpecError("Too many ':'-separated components in pattern p:a:b:c"),
    );
    assert.throws(() => parseProbeSpec('nosuchlib:f', { findLibrary: lib }), {
      message: 'unable to find library nosuchlib',
    });
  });

  it('returnSpec pairs entry and return', () => {
    const s = parseProbeSpec('c:malloc', { findLibrary: lib });
    assert.equal(returnSpec(s).kind, 'uretprobe');
    assert.equal(returnSpec(parseProbeSpec('vfs_read')).kind, 'kretprobe');
    assert.throws(() => returnSpec(parseProbeSpec('t:a:b')), ProbeSpecError);
  });
});

describe('matching', () => {
  const source = {
    kernelFunctions: () => ['vfs_read', 'vfs_readv', 'xvfs_read', 'vfs_write'],
    tracepoints: () => ['sched:sched_switch', 'sched:sched_wakeup', 'syscalls:sys_enter_read'],
    userFunctions: () => [
      { name: 'read', address: 0x100 },
      { name: '__read', address: 0x100 },
      { name: 'readv', address: 0x200 },
      { name: 'read', address: 0x300 },
      { name: 'malloc', address: 0x400 },
    ],
    usdtProbes: () => [
      { provider: 'p1', name: 'tick' },
      { provider: 'p2', name: 'tock' },
    ],
  };
  const m = (t: string, regexp = false) => matchTargets(parseProbeSpec(t, { findLibrary: lib, regexp }), source);

  it('globs are anchored at both ends', () => {
    assert.equal(globToBccRegex('go:os.*'), '^go:os..*$');
    assert.deepEqual(m('vfs_read'), ['vfs_read']);
    assert.deepEqual(m('vfs_*'), ['vfs_read', 'vfs_readv', 'vfs_write']);
    assert.deepEqual(m('t:sched:*'), ['sched:sched_switch', 'sched:sched_wakeup']);
    assert.deepEqual(m('t:*:*read'), ['syscalls:sys_enter_read']);
  });

  it('regexps: re.match for user functions and tracepoints, re.fullmatch for kernel functions', () => {
    assert.deepEqual(m('vfs_read', true), ['vfs_read']);
    assert.deepEqual(m('vfs_r.*', true), ['vfs_read', 'vfs_readv']);
    assert.deepEqual(m('c:read', true), ['read', 'readv']);
    assert.deepEqual(m('t:sched:sched_s', true), ['sched:sched_switch']);
  });

  it('user functions: one name per address, each name once (bcc funccount)', () => {
    assert.deepEqual(m('c:*read*'), ['read', 'readv']);
    assert.deepEqual(m('c:__read'), ['__read']);
  });

  it('USDT probes match on the probe name', () => {
    assert.deepEqual(m('u:c:t*'), ['p1:tick', 'p2:tock']);
    assert.deepEqual(m('u:c:p2:t*'), ['p2:tock']);
  });

  it('attach points', () => {
    const s = parseProbeSpec('c:malloc', { findLibrary: lib });
    assert.equal(toAttachPoint(s), 'uprobe:/lib/libc.so.6:malloc');
    assert.equal(toAttachPoint(returnSpec(s), 'free'), 'uretprobe:/lib/libc.so.6:free');
    assert.equal(toAttachPoint(parseProbeSpec('vfs_read')), 'kprobe:vfs_read');
    assert.equal(toAttachPoint(parseProbeSpec('t:sched:sched_switch')), 'tracepoint:sched:sched_switch');
    assert.equal(toAttachPoint(parseProbeSpec('u:c:p:tick', { findLibrary: lib })), 'usdt:/lib/libc.so.6:p:tick');
  });

  it('probe limit', () => {
    assert.equal(probeLimit({}), 1000);
    assert.equal(probeLimit({ BCC_PROBE_LIMIT: '5' }), 5);
    verifyLimit(1000);
    assert.throws(() => verifyLimit(1001), new ProbeSpecError('maximum of 1000 probes allowed, attempted 1001'));
  });
});

describe('on this machine', () => {
  it('c resolves to the libc of the dynamic linker cache', () => {
    const c = findLibrary('c');
    assert.ok(c, 'libc not found');
    assert.match(c, /\/libc\.so\.6$/);
    assert.equal(findLibrary('libc'), c);
    assert.equal(realpathSync(findLibrary('libc.so.6')!), realpathSync(c));
    assert.equal(findLibrary('bpfscope_no_such_library_x'), undefined);
  });

  it('matches real symbols: libc getpid, the workload num', () => {
    const s = parseProbeSpec('c:getpid');
    assert.deepEqual(matchTargets(s), ['getpid']);
    const w = parseProbeSpec(`${workloadPath()}:num`);
    assert.deepEqual(matchTargets(w), ['num']);
    assert.deepEqual(matchTargets(parseProbeSpec(`${workloadPath()}:args*`)), ['args6']);
    assert.deepEqual(matchTargets(parseProbeSpec('t:syscalls:sys_enter_getppid')), ['syscalls:sys_enter_getppid']);
  });
});
