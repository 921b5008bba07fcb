/**
 * Register allocation and emission against the live kernel: IR programs with virtual registers are allocated,
 * emitted, loaded as raw_tracepoint programs (BPF_PROG_TYPE_RAW_TRACEPOINT = 17) and run with BPF_PROG_TEST_RUN;
 * the verifier must accept them and the return value must be what the IR computes.
 *
 * Uses a private minimal bpf() loader (koffi, x86-64 syscall 321, `union bpf_attr` offsets from KERNEL.md) so the
 * test depends only on the codegen backend.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import koffi from 'koffi';
import { disassemble } from '../../src/bpf/disasm.js';
import * as I from '../../src/bpf/insn.js';
import { FP, R0, R1 } from '../../src/bpf/opcodes.js';
import { emit } from '../../src/codegen/emit.js';
import { IrFunction } from '../../src/codegen/ir.js';
import { allocateRegisters } from '../../src/codegen/regalloc.js';
import { runIr } from '../codegen/interp.js';
import { arbProgram, buildIr } from '../codegen/randprog.js';

const libc = koffi.load('libc.so.6');
const syscall = libc.func('long syscall(long nr, ...)');
const closeFd = libc.func('int close(int fd)');
const SYS_BPF = 321;
const BPF_PROG_LOAD = 5;
const BPF_PROG_TEST_RUN = 10;
const RAW_TRACEPOINT = 17;

function bpf(cmd: number, attr: Buffer): number {
  const r = Number(syscall(SYS_BPF, 'int', cmd, 'void *', attr, 'uint', attr.length));
  return r < 0 ? -koffi.errno() : r;
}

/** Loads a raw_tracepoint program; returns its fd, or throws with the verifier log. */
function load(bytes: Buffer): number {
  const attr = Buffer.alloc(168);
  const license = Buffer.from('GPL\0');
  const log = Buffer.alloc(1 << 20);
  attr.writeUInt32LE(RAW_TRACEPOINT, 0);
  attr.writeUInt32LE(bytes.length / 8, 4);
  attr.writeBigUInt64LE(BigInt(koffi.address(bytes)), 8);
  attr.writeBigUInt64LE(BigInt(koffi.address(license)), 16);
  attr.writeUInt32LE(1, 24);
  attr.writeUInt32LE(log.length, 28);
  attr.writeBigUInt64LE(BigInt(koffi.address(log)), 32);
  const fd = bpf(BPF_PROG_LOAD, attr);
  if (fd < 0) {
    const text = log.toString('utf8', 0, Math.max(log.indexOf(0), 0));
    throw new Error(`BPF_PROG_LOAD failed (errno ${-fd}):\n${text.split('\n').slice(-25).join('\n')}`);
  }
  return fd;
}

/** Runs a loaded program once with `ctx` as its u64 argument array; returns the u32 return value. */
function testRun(fd: number, ctx: Buffer): number {
  const attr = Buffer.alloc(168);
  attr.writeUInt32LE(fd, 0);
  attr.writeUInt32LE(ctx.length, 40);
  attr.writeBigUInt64LE(BigInt(koffi.address(ctx)), 48);
  const r = bpf(BPF_PROG_TEST_RUN, attr);
  if (r < 0) throw new Error(`BPF_PROG_TEST_RUN failed (errno ${-r})`);
  return attr.readUInt32LE(4);
}

const fds: number[] = [];
after(() => {
  for (const fd of fds) closeFd(fd);
});

/** Allocates, emits, loads and runs `fn`; returns the kernel's return value. */
function runInKernel(fn: IrFunction, ctx: Buffer): number {
  const out = emit(fn, () => {
    throw new Error('no maps in these programs');
  });
  let fd: number;
  try {
    fd = load(out.bytes);
  } catch (e) {
    throw new Error(`${(e as Error).message}\nprogram:\n${disassemble(out.insns, { pc: true }).join('\n')}`);
  }
  fds.push(fd);
  return testRun(fd, ctx);
}

// In BPF_PROG_TEST_RUN the program runs in the calling thread: Node's main thread, whose tid is the pid.
const PID_TGID = (BigInt(process.pid) << 32n) | BigInt(process.pid);
const kernelHelper = (id: number): bigint => {
  if (id !== 14) throw new Error(`helper ${id} has no fake in this test`);
  return PID_TGID;
};

function ctxArgs(args: bigint[]): Buffer {
  const b = Buffer.alloc(64);
  args.forEach((a, i) => b.writeBigUInt64LE(BigInt.asUintN(64, a), 8 * i));
  return b;
}

describe('codegen backend on the live kernel', () => {
  it('a hand-built program with spills across calls, a branch and a computed result passes the verifier', () => {
    const fn = new IrFunction('spill_test');
    const ctx = fn.vreg();
    fn.emit(I.mov64(ctx, R1));
    fn.emit(I.call('get_current_pid_tgid'));
    const pidTgid = fn.vreg();
    fn.emit(I.mov64(pidTgid, R0));
    const pid = fn.vreg();
    fn.emit(I.mov64(pid, pidTgid));
    fn.emit(I.alu64Imm('rsh', pid, 32));
    // 22 values, all live across the next call: only r6-r9 survive it, so most must be spilled.
    const vals: number[] = [];
    for (let i = 0; i < 22; i++) {
      const v = fn.vreg();
      vals.push(v);
      fn.emit(I.ldx(8, v, ctx, 8 * (i % 4)));
      fn.emit(I.alu64Imm('mul', v, i + 1));
      fn.emit(I.alu64('add', v, pid));
    }
    const scratch = fn.allocStack(8);
    fn.emit(I.stx(8, FP, pid, scratch));
    fn.emit(I.call('get_current_pid_tgid'));
    const again = fn.vreg();
    fn.emit(I.mov64(again, R0));
    const acc = fn.vreg();
    fn.emit(I.mov64Imm(acc, 0));
    for (const v of vals) {
      fn.emit(I.alu64Imm('mul', acc, 31));
      fn.emit(I.alu64('xor', acc, v));
    }
    // if ((pid_tgid again) == pid_tgid) acc += 1000 else acc -= 1000
    fn.emit(I.jmp('jne', again, pidTgid, 'differ'));
    fn.emit(I.alu64Imm('add', acc, 1000));
    fn.emit(I.ja('done'));
    fn.mark('differ');
    fn.emit(I.alu64Imm('sub', acc, 1000));
    fn.mark('done');
    const back = fn.vreg();
    fn.emit(I.ldx(8, back, FP, scratch));
    fn.emit(I.alu64('add', acc, back));
    fn.emit(I.mov64(R0, acc));
    fn.emit(I.exit());

    const args = [3n, 0x1234_5678_9abcn, -7n, 1n << 40n];
    // The same computation in plain TypeScript.
    const pidN = PID_TGID >> 32n;
    let expect = 0n;
    for (let i = 0; i < 22; i++) {
      const v = (BigInt.asUintN(64, args[i % 4]!) * BigInt(i + 1) + pidN) & ((1n << 64n) - 1n);
      expect = ((expect * 31n) & ((1n << 64n) - 1n)) ^ v;
    }
    expect = (expect + 1000n + pidN) & ((1n << 64n) - 1n);
    const ctxBuf = ctxArgs(args);
    assert.equal(runIr(fn.items, { ctx: ctxBuf, helper: kernelHelper }).r0, expect, 'IR semantics');

    const res = allocateRegisters(fn);
    assert.ok(res.spilled.length >= 15, `expected spills, got ${res.spilled.length}`);
    assert.ok(fn.frameSize > 8 && fn.frameSize <= 512);
    assert.equal(runInKernel(fn, ctxBuf), Number(expect & 0xffffffffn));
  });

  it('random IR programs: the kernel accepts the allocated code and returns what the IR computes', () => {
    fc.assert(
      fc.property(
        arbProgram({ kernelSafe: true, maxDepth: 2 }),
        fc.array(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { minLength: 8, maxLength: 8 }),
        (spec, args) => {
          const fn = buildIr(spec, 'rand');
          const ctx = ctxArgs(args);
          const want = runIr(fn.items, { ctx, helper: kernelHelper }).r0;
          allocateRegisters(fn);
          assert.equal(runInKernel(fn, ctx), Number(want & 0xffffffffn));
        },
      ),
      { numRuns: 60 },
    );
  });
});
