import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { KernelError } from '../../src/errors.js';
import {
  BPF_EXIST,
  BPF_NOEXIST,
  btfGetFdById,
  btfGetNextId,
  btfInfo,
  LOG_LEVEL_STATS,
  linkCreate,
  mapCreate,
  mapDelete,
  mapDump,
  mapGetNextKey,
  mapInfo,
  mapLookup,
  mapLookupAndDelete,
  mapLookupBatch,
  mapUpdate,
  progInfo,
  progLoad,
  progTestRun,
  rawTracepointOpen,
  VerifierError,
} from '../../src/kernel/bpf.js';
import { Btf } from '../../src/kernel/btf.js';
import { close, Errno } from '../../src/kernel/ffi.js';
import { fixtureReadableBy, runFixture } from './fixtures/run.js';
import { call, exit, H, incrementArray0, jeqImm, jneImm, ldxDw, movImm, movReg, prog, rshImm } from './raw-insns.js';

const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
};
const u64 = (v: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return b;
};

test('MAP_CREATE name/flags and OBJ_GET_INFO_BY_FD', () => {
  const fd = mapCreate({ mapType: 1, keySize: 4, valueSize: 8, maxEntries: 64, flags: 1, name: 'bpf-test:hash' });
  try {
    const info = mapInfo(fd);
    assert.equal(info.type, 1);
    assert.equal(info.keySize, 4);
    assert.equal(info.valueSize, 8);
    assert.equal(info.maxEntries, 64);
    assert.equal(info.flags, 1); // BPF_F_NO_PREALLOC
    assert.equal(info.name, 'bpf_test_hash'); // invalid characters replaced
    assert.ok(info.id > 0);
  } finally {
    close(fd);
  }
  assert.throws(
    () => mapCreate({ mapType: 1, keySize: 0, valueSize: 8, maxEntries: 1, name: 'bad' }),
    (e: unknown) => e instanceof KernelError && e.errno === Errno.EINVAL && /BPF_MAP_CREATE/.test(e.message),
  );
});

test('element commands: update flags, lookup, get_next_key, delete, lookup_and_delete', () => {
  const fd = mapCreate({ mapType: 1, keySize: 4, valueSize: 8, maxEntries: 8, name: 'bpf_test_elem' });
  try {
    const v = Buffer.alloc(8);
    assert.equal(mapLookup(fd, u32(1), v), false);
    assert.equal(mapGetNextKey(fd, null, Buffer.alloc(4)), false, 'empty map has no first key');
    mapUpdate(fd, u32(1), u64(11n), BPF_NOEXIST);
    assert.throws(
      () => mapUpdate(fd, u32(1), u64(12n), BPF_NOEXIST),
      (e: unknown) => e instanceof KernelError && e.errno === Errno.EEXIST,
    );
    assert.throws(
      () => mapUpdate(fd, u32(2), u64(12n), BPF_EXIST),
      (e: unknown) => e instanceof KernelError && e.errno === Errno.ENOENT,
    );
    mapUpdate(fd, u32(1), u64(13n), BPF_EXIST);
    mapUpdate(fd, u32(2), u64(22n));
    assert.equal(mapLookup(fd, u32(1), v), true);
    assert.equal(v.readBigUInt64LE(), 13n);
    const seen: number[] = [];
    let prev: Buffer | null = null;
    for (;;) {
      const next = Buffer.alloc(4);
      if (!mapGetNextKey(fd, prev, next)) break;
      seen.push(next.readUInt32LE());
      prev = next;
    }
    assert.deepEqual(
      seen.sort((a, b) => a - b),
      [1, 2],
    );
    assert.equal(mapLookupAndDelete(fd, u32(2), v), true);
    assert.equal(v.readBigUInt64LE(), 22n);
    assert.equal(mapLookup(fd, u32(2), v), false);
    assert.equal(mapDelete(fd, u32(1)), true);
    assert.equal(mapDelete(fd, u32(1)), false);
  } finally {
    close(fd);
  }
});

test('MAP_LOOKUP_BATCH returns the same elements as the get_next_key walk', () => {
  const fd = mapCreate({ mapType: 1, keySize: 4, valueSize: 8, maxEntries: 2048, name: 'bpf_test_batch' });
  try {
    for (let i = 0; i < 1000; i++) mapUpdate(fd, u32(i * 7), u64(BigInt(i) * 3n));
    const batched = mapDump(fd, 4, 8, { chunk: 64 });
    const walked = mapDump(fd, 4, 8, { useBatch: false });
    assert.equal(batched.batched, true);
    assert.equal(walked.batched, false);
    assert.equal(batched.count, 1000);
    assert.equal(walked.count, 1000);
    const asMap = (d: typeof batched) => {
      const m = new Map<number, bigint>();
      for (let i = 0; i < d.count; i++) m.set(d.keys.readUInt32LE(i * 4), d.values.readBigUInt64LE(i * 8));
      return m;
    };
    const a = asMap(batched);
    assert.deepEqual(a, asMap(walked));
    for (let i = 0; i < 1000; i++) assert.equal(a.get(i * 7), BigInt(i) * 3n);
    // A single step on an empty part: ENOENT is "done", not an error.
    const empty = mapCreate({ mapType: 1, keySize: 4, valueSize: 8, maxEntries: 4, name: 'bpf_test_empty' });
    try {
      assert.deepEqual(mapLookupBatch(empty, null, Buffer.alloc(8), Buffer.alloc(16), Buffer.alloc(32), 4), {
        count: 0,
        done: true,
      });
    } finally {
      close(empty);
    }
  } finally {
    close(fd);
  }
});

test('map types without batch ops fall back to get_next_key (STACK_TRACE)', () => {
  const fd = mapCreate({ mapType: 7, keySize: 4, valueSize: 8 * 127, maxEntries: 16, name: 'bpf_test_stack' });
  try {
    assert.throws(
      () => mapLookupBatch(fd, null, Buffer.alloc(8), Buffer.alloc(64), Buffer.alloc(16 * 8 * 127), 16),
      (e: unknown) =>
        e instanceof KernelError && ([Errno.EINVAL, Errno.ENOTSUPP, Errno.EOPNOTSUPP] as number[]).includes(e.errno),
    );
    const d = mapDump(fd, 4, 8 * 127);
    assert.equal(d.batched, false);
    assert.equal(d.count, 0);
  } finally {
    close(fd);
  }
});

const RET42 = prog(movImm(0, 42), exit());

test('PROG_LOAD + PROG_TEST_RUN returns the program value; prog info fields', () => {
  const { fd, log } = progLoad({ progType: 17, insns: RET42, name: 'bpf_test_ret42' });
  assert.equal(log, undefined);
  try {
    assert.equal(progTestRun(fd).retval, 42);
    const info = progInfo(fd, { xlated: true });
    assert.equal(info.type, 17);
    assert.equal(info.name, 'bpf_test_ret42');
    assert.equal(info.xlatedProgLen, 16);
    assert.equal(info.verifiedInsns, 2);
    assert.match(info.tag, /^[0-9a-f]{16}$/);
    assert.deepEqual(info.xlated, RET42);
    // bpftool agrees on id and name.
    const shown = JSON.parse(
      execFileSync('bpftool', ['-j', 'prog', 'show', 'id', String(info.id)], { encoding: 'utf8' }),
    );
    assert.equal(shown.name, 'bpf_test_ret42');
    assert.equal(shown.tag, info.tag);
  } finally {
    close(fd);
  }
});

test('PROG_TEST_RUN passes the raw_tp context (u64 args)', () => {
  // r0 = ctx[1]; if r0 == 7 r0 = 1000
  const insns = prog(ldxDw(0, 1, 8), jeqImm(0, 7, 1), exit(), movImm(0, 1000), exit());
  const { fd } = progLoad({ progType: 17, insns, name: 'bpf_test_ctx' });
  try {
    const ctx = Buffer.alloc(16);
    ctx.writeBigUInt64LE(5n, 8);
    assert.equal(progTestRun(fd, { ctxIn: ctx }).retval, 5);
    ctx.writeBigUInt64LE(7n, 8);
    assert.equal(progTestRun(fd, { ctxIn: ctx }).retval, 1000);
  } finally {
    close(fd);
  }
});

test('a rejected program throws VerifierError with the verifier log', () => {
  // exit without setting r0
  assert.throws(
    () => progLoad({ progType: 17, insns: exit(), name: 'bpf_test_bad' }),
    (e: unknown) => {
      assert.ok(e instanceof VerifierError);
      assert.equal(e.errno, Errno.EACCES);
      assert.match(e.log, /R0 !read_ok/);
      assert.ok(e.lines.includes('R0 !read_ok'), e.lines.join('\n'));
      assert.equal(e.message, "the BPF verifier rejected program 'bpf_test_bad': R0 !read_ok");
      return true;
    },
  );
});

test('the verifier log buffer grows on ENOSPC until the whole log fits', () => {
  // 3000 `r1 = 0` instructions and a bad exit: the level-1 log is far longer than 128 bytes.
  const body = Array.from({ length: 3000 }, () => movImm(1, 0));
  const insns = prog(...body, exit());
  assert.throws(
    () => progLoad({ progType: 17, insns, name: 'bpf_test_long', logSize: 128 }),
    (e: unknown) => {
      assert.ok(e instanceof VerifierError);
      assert.match(e.log, /R0 !read_ok/);
      assert.match(e.log, /^processed 3001 insns/m);
      return true;
    },
  );
});

test('log_level 4 (stats) returns the log of a successful load', () => {
  const { fd, log } = progLoad({ progType: 17, insns: RET42, name: 'bpf_test_stats', logLevel: LOG_LEVEL_STATS });
  close(fd);
  assert.match(log ?? '', /^processed 2 insns/m);
});

test('RAW_TRACEPOINT_OPEN attaches; an unknown tracepoint is ENOENT', () => {
  const { fd } = progLoad({ progType: 17, insns: prog(movImm(0, 0), exit()), name: 'bpf_test_rawtp' });
  try {
    const link = rawTracepointOpen('sys_enter', fd);
    assert.ok(link > 0);
    close(link);
    assert.throws(
      () => rawTracepointOpen('no_such_tracepoint_xyz', fd),
      (e: unknown) => e instanceof KernelError && e.errno === Errno.ENOENT,
    );
  } finally {
    close(fd);
  }
});

const SYS_GETPPID = process.arch === 'arm64' ? 173 : 110;

/** ctx = u64[] {regs, id} of sys_enter: counts getppid entries of this process in slot 0 of `map`. */
function sysEnterGetppidCounter(mapFd: number) {
  return prog(
    movReg(6, 1), // 0
    call(H.getCurrentPidTgid), // 1
    rshImm(0, 32), // 2
    jneImm(0, process.pid, 11), // 3: -> 15
    ldxDw(1, 6, 8), // 4: id
    jneImm(1, SYS_GETPPID, 9), // 5: -> 15
    incrementArray0(mapFd), // 6-14
    movImm(0, 0), // 15
    exit(), // 16
  );
}

for (const how of ['raw_tp', 'tp_btf (RAW_TRACEPOINT_OPEN)', 'tp_btf (LINK_CREATE tracing)'] as const) {
  test(`${how} on sys_enter counts exactly N getppid calls of this process`, () => {
    const map = mapCreate({ mapType: 2, keySize: 4, valueSize: 8, maxEntries: 1, name: 'bpf_test_cnt' });
    const tpBtf = how !== 'raw_tp';
    const btfId = tpBtf ? Btf.vmlinux().typedefId('btf_trace_sys_enter') : undefined;
    const { fd } = progLoad({
      progType: tpBtf ? 26 : 17,
      insns: sysEnterGetppidCounter(map),
      name: 'bpf_test_sysent',
      ...(tpBtf ? { expectedAttachType: 23, attachBtfId: btfId! } : {}),
    });
    const count = () => {
      const v = Buffer.alloc(8);
      mapLookup(map, Buffer.alloc(4), v);
      return v.readBigUInt64LE();
    };
    try {
      const link =
        how === 'raw_tp'
          ? rawTracepointOpen('sys_enter', fd)
          : how === 'tp_btf (RAW_TRACEPOINT_OPEN)'
            ? rawTracepointOpen(null, fd)
            : linkCreate(fd, 0, 23, { kind: 'tracing' });
      for (let i = 0; i < 500; i++) void process.ppid;
      close(link);
      assert.equal(count(), 500n);
      for (let i = 0; i < 100; i++) void process.ppid;
      assert.equal(count(), 500n, 'closing the link detaches');
    } finally {
      close(fd);
      close(map);
    }
  });
}

test('BTF_GET_NEXT_ID / BTF_GET_FD_BY_ID find the vmlinux BTF object', () => {
  let id = btfGetNextId(0);
  const names: string[] = [];
  while (id !== undefined) {
    const fd = btfGetFdById(id);
    try {
      const info = btfInfo(fd);
      assert.equal(info.id, id);
      if (info.kernelBtf) names.push(info.name);
    } finally {
      close(fd);
    }
    id = btfGetNextId(id);
  }
  assert.ok(names.includes('vmlinux'), names.join(','));
});

test('without privileges EPERM becomes the one-sentence root message', (t) => {
  if (!fixtureReadableBy('nobody', 'unprivileged')) {
    t.skip('the checkout is not readable by user nobody');
    return;
  }
  const r = runFixture('unprivileged', [], { user: 'nobody' });
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  for (const what of ['map', 'prog']) {
    assert.equal(out[what].name, 'PermissionError');
    assert.equal(out[what].message, 'bpfscope needs root (or CAP_BPF and CAP_PERFMON): this process has neither');
    assert.equal(out[what].hint, undefined);
  }
});
