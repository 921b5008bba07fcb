import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { KernelError } from '../../src/errors.js';
import { mapCreate } from '../../src/kernel/bpf.js';
import * as ffi from '../../src/kernel/ffi.js';
import { runFixture } from './fixtures/run.js';

test('importing the kernel modules does not load koffi; the first libc call does', () => {
  const r = runFixture('lazy-ffi');
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { before: false, afterNoop: false, after: true });
});

test("koffi's native module is loaded without koffi's JavaScript loader (issue 13: ~12 ms of each tool's start)", () => {
  ffi.strerror(2);
  const loaded = Object.keys(createRequire(import.meta.url).cache);
  assert.ok(
    loaded.some((f) => /[\\/]@koromix[\\/]koffi-[^/\\]+[\\/][^/\\]+[\\/]koffi\.node$/.test(f)),
    `koffi.node not loaded from its platform package: ${loaded.filter((f) => f.includes('koffi')).join(', ')}`,
  );
  assert.ok(
    !loaded.some((f) => /[\\/]koffi[\\/](src[\\/]koffi[\\/])?index\.cjs$/.test(f)),
    "koffi's index.cjs was loaded",
  );
});

test('kernelError carries syscall, errno and strerror text', () => {
  const e = ffi.kernelError('bpf(BPF_MAP_CREATE)', ffi.Errno.EINVAL);
  assert.ok(e instanceof KernelError);
  assert.equal(e.syscall, 'bpf(BPF_MAP_CREATE)');
  assert.equal(e.errno, 22);
  assert.equal(e.message, 'bpf(BPF_MAP_CREATE): Invalid argument (EINVAL)');
  assert.equal(ffi.kernelError('x', 524).message, 'x: Operation not supported (ENOTSUPP)');
  assert.equal(ffi.strerror(2), 'No such file or directory');
  assert.equal(ffi.errnoName(28), 'ENOSPC');
  assert.equal(ffi.errnoName(200), 'errno 200');
});

test('raw wrappers return -errno instead of throwing', () => {
  assert.equal(ffi.close(-1), 0);
  assert.equal(ffi.close(1_000_000), -ffi.Errno.EBADF);
  assert.equal(ffi.ioctl(1_000_000, 0x2400, 0), -ffi.Errno.EBADF);
  assert.equal(ffi.mmap(4096, ffi.PROT_READ, ffi.MAP_SHARED, 1_000_000, 0), -ffi.Errno.EBADF);
  // bpf() with an unknown command.
  assert.equal(ffi.sysBpf(9999, Buffer.alloc(168)), -ffi.Errno.EINVAL);
});

test('pageSize matches the architecture', () => {
  if (process.arch === 'x64') assert.equal(ffi.pageSize(), 4096);
  else assert.ok([4096, 16384, 65536].includes(ffi.pageSize()));
});

test('mmap + view: two mappings of a ring buffer consumer page share memory', () => {
  const fd = mapCreate({ mapType: 27, keySize: 0, valueSize: 0, maxEntries: 4096, name: 'ffi_test' });
  try {
    const a = ffi.mmap(4096, ffi.PROT_READ | ffi.PROT_WRITE, ffi.MAP_SHARED, fd, 0);
    const b = ffi.mmap(4096, ffi.PROT_READ | ffi.PROT_WRITE, ffi.MAP_SHARED, fd, 0);
    assert.notEqual(typeof a, 'number');
    assert.notEqual(typeof b, 'number');
    assert.notEqual(ffi.address(a), ffi.address(b));
    const va = new BigUint64Array(ffi.view(a, 4096));
    const vb = new BigUint64Array(ffi.view(b, 4096));
    va[0] = 0x1234_5678_9abcn;
    assert.equal(vb[0], 0x1234_5678_9abcn);
    // The producer page cannot be mapped writable (KERNEL.md): EPERM.
    assert.equal(ffi.mmap(4096, ffi.PROT_READ | ffi.PROT_WRITE, ffi.MAP_SHARED, fd, 4096), -ffi.Errno.EPERM);
    assert.equal(ffi.munmap(a, 4096), 0);
    assert.equal(ffi.munmap(b, 4096), 0);
  } finally {
    ffi.close(fd);
  }
});

test('epoll + eventfd: sync and async epoll_wait report the tagged fd', async () => {
  const ep = ffi.epollCreate1(ffi.EPOLL_CLOEXEC);
  const ev = ffi.eventfd(0, ffi.EFD_CLOEXEC | ffi.EFD_NONBLOCK);
  assert.ok(ep >= 0 && ev >= 0);
  try {
    assert.equal(ffi.epollCtl(ep, ffi.EPOLL_CTL_ADD, ev, ffi.EPOLLIN, 77), 0);
    const events = Buffer.alloc(ffi.EPOLL_EVENT_SIZE * 4);
    assert.equal(ffi.epollWait(ep, events, 0), 0, 'nothing ready yet');
    const one = Buffer.alloc(8);
    one.writeBigUInt64LE(1n);
    assert.equal(ffi.write(ev, one), 8);
    assert.equal(ffi.epollWait(ep, events, 0), 1);
    assert.equal(ffi.epollEventData(events, 0), 77);
    // Async: the worker thread blocks until the eventfd is written again after being drained.
    const got = Buffer.alloc(8);
    assert.equal(ffi.read(ev, got), 8);
    assert.equal(got.readBigUInt64LE(), 1n);
    const n = await new Promise<number>((resolve) => {
      ffi.epollWaitAsync(ep, events, 5000, resolve);
      setTimeout(() => ffi.write(ev, one), 20);
    });
    assert.equal(n, 1);
    assert.equal(ffi.epollEventData(events, 0), 77);
  } finally {
    ffi.close(ev);
    ffi.close(ep);
  }
});
