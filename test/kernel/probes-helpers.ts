/**
 * Test-only BPF programs for the live probe provider tests, written as raw instructions (no compiler): each counts
 * its runs per CPU in an ARRAY map (key = bpf_get_smp_processor_id(), value u64), optionally only for one process.
 */

import { BpfMap } from '../../src/bpf/map.js';
import { type LoadedProgram, loadProgram } from '../../src/bpf/program.js';
import { numPossibleCpus } from '../../src/kernel/cpus.js';

/** One raw instruction: opcode, dst, src, off (s16), imm (s32); see KERNEL.md "Instructions". */
function raw(code: number, dst: number, src: number, off: number, imm: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt8(code, 0);
  b.writeUInt8((src << 4) | dst, 1);
  b.writeInt16LE(off, 2);
  b.writeInt32LE(imm, 4);
  return b;
}

/**
 * Program body (prog type given by the caller):
 * ```
 *   call get_current_pid_tgid; r0 >>= 32; if r0 != PID goto out   (only when pid > 0)
 *   call get_smp_processor_id; *(u32 *)(r10 - 4) = r0
 *   r1 = map; r2 = r10; r2 += -4; call map_lookup_elem
 *   if r0 == 0 goto out; r1 = 1; lock *(u64 *)(r0 + 0) += r1
 * out: r0 = 0; exit
 * ```
 */
function countingInsns(mapFd: number, pid: number): Buffer {
  const tail = [
    raw(0x85, 0, 0, 0, 8), // call bpf_get_smp_processor_id
    raw(0x63, 10, 0, -4, 0), // *(u32 *)(r10 - 4) = r0
    raw(0x18, 1, 1, 0, mapFd), // r1 = map (ld_imm64, BPF_PSEUDO_MAP_FD)
    raw(0x00, 0, 0, 0, 0),
    raw(0xbf, 2, 10, 0, 0), // r2 = r10
    raw(0x07, 2, 0, 0, -4), // r2 += -4
    raw(0x85, 0, 0, 0, 1), // call bpf_map_lookup_elem
    raw(0x15, 0, 0, 2, 0), // if r0 == 0 goto out
    raw(0xb7, 1, 0, 0, 1), // r1 = 1
    raw(0xdb, 0, 1, 0, 0), // lock *(u64 *)(r0 + 0) += r1
    raw(0xb7, 0, 0, 0, 0), // out: r0 = 0
    raw(0x95, 0, 0, 0, 0), // exit
  ];
  const head =
    pid > 0
      ? [
          raw(0x85, 0, 0, 0, 14), // call bpf_get_current_pid_tgid
          raw(0x77, 0, 0, 0, 32), // r0 >>= 32
          raw(0x55, 0, 0, tail.length - 2, pid), // if r0 != pid goto out
        ]
      : [];
  return Buffer.concat([...head, ...tail]);
}

/** A loaded counting program and its per-CPU counter map. */
export class PerCpuCounter {
  readonly map: BpfMap;
  readonly prog: LoadedProgram;

  /** Load a counting program of `progType` (counting only process `pid` when > 0). */
  constructor(progType: number, pid = 0) {
    this.map = BpfMap.create({ type: 2, keySize: 4, valueSize: 8, maxEntries: numPossibleCpus(), name: 'test_counts' });
    try {
      this.prog = loadProgram({ type: progType, insns: countingInsns(this.map.fd, pid), name: 'test_count' });
    } catch (e) {
      this.map.close();
      throw e;
    }
  }

  /** Count of runs on `cpu` so far. */
  count(cpu: number): number {
    const key = Buffer.alloc(4);
    key.writeUInt32LE(cpu);
    return Number(this.map.lookup(key)!.readBigUInt64LE(0));
  }

  /** Counts of all possible CPUs, indexed by CPU. */
  counts(): number[] {
    return Array.from({ length: numPossibleCpus() }, (_, cpu) => this.count(cpu));
  }

  close(): void {
    this.prog.close();
    this.map.close();
  }
}
