/**
 * Hand-written ring buffer producers for the consumer tests (test/kernel/ringbuf*.test.ts), run with
 * BPF_PROG_TEST_RUN.
 */
import type { BpfMap } from '../../src/bpf/map.js';
import { type LoadedProgram, loadProgram, ProgType } from '../../src/bpf/program.js';
import {
  addImm,
  call,
  exit,
  H,
  incrementArray0,
  jsgeImm,
  ldMapFd,
  ldxDw,
  movImm,
  movReg,
  prog,
  stxDw,
} from './raw-insns.js';

/**
 * raw_tp program: ringbuf_output(rb, &ctx[0], 8, flags); on failure errs[0]++. Run through PROG_TEST_RUN with
 * ctx = [payload].
 */
export function outputProgram(rb: BpfMap, errs: BpfMap, flags = 0): LoadedProgram {
  return loadProgram({
    type: ProgType.RAW_TRACEPOINT,
    name: 'rb_output',
    insns: prog(
      movReg(6, 1),
      ldxDw(1, 6, 0),
      stxDw(10, -8, 1),
      ldMapFd(1, rb.fd),
      movReg(2, 10),
      addImm(2, -8),
      movImm(3, 8),
      movImm(4, flags),
      call(H.ringbufOutput),
      jsgeImm(0, 0, 9),
      incrementArray0(errs.fd),
      movImm(0, 0),
      exit(),
    ),
  });
}
