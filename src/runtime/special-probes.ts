/**
 * The runs of a session's special probes through BPF_PROG_TEST_RUN: BEGIN, END and self:signal probes
 * ({@link runSpecialProbes}), `--mode bench` ({@link runBenchmarks}) and `--mode test` ({@link runTests}), as current
 * bpftrace runs them (`bpftrace.cpp` run). What they need of the session is {@link SpecialProbeSession}.
 */
import type { LoadedProgram } from '../bpf/program.js';
import { AsyncAction, type CompiledProgram } from '../codegen/plan.js';
import type { RecordDispatcher } from './records.js';

/** A loaded program with its plan (its probe's name and `special` kind: `begin`, `end`, `bench`, `test`...). */
export interface LoadedProbe {
  plan: CompiledProgram['programs'][number];
  prog: LoadedProgram;
}

/** What the bench and test runs need of a session. */
export interface SpecialProbeSession {
  /** Every loaded program, in program order. */
  readonly programs: readonly LoadedProbe[];
  /** The session's record handling: dropped while benchmarks run, collected while a test runs, then replayed. */
  readonly records: Pick<RecordDispatcher, 'dropping' | 'collecting' | 'onRecord'>;
  /** Read what the ring buffer holds now (each record goes to `records`). */
  readRing(): void;
  /** The exit flag's value (bits 8-15: exit()'s code; 0: no exit()). */
  exitFlag(): bigint;
  /** Reset the exit flag to 0 (an exit() in a bench or test ends that probe's run, not the session). */
  clearExitFlag(): void;
  /** Take the lost-event count so far as reported: events the runs could not fit are not the program's to report. */
  forgetLost(): void;
  /** Write out what was printed. */
  flush(): void;
}

/** Run each program of `kind` (`begin`, `end`, `signal`) once, in program order, with an empty context. */
export function runSpecialProbes(programs: readonly LoadedProbe[], kind: string): void {
  for (const p of programs) if (p.plan.expanded.special === kind) p.prog.testRun({});
}

/**
 * `--mode bench`: time every bench probe as current bpftrace does (`bpftrace.cpp` run): BPF_PROG_TEST_RUN with a
 * 14-byte packet (an XDP program's input must be at least an Ethernet header) and a repeat count that grows until
 * the runs take at least 1 ms, then `report` the kernel's average time per run and the repeat count. What the
 * probes print while being timed is dropped; a probe that returns non-zero is skipped; one that calls exit() fails
 * (`Benchmark 'NAME' failed.` on stderr, and the result is false).
 */
export function runBenchmarks(
  session: SpecialProbeSession,
  report: (names: string[], index: number, averageNs: number, iters: number) => void,
): boolean {
  const benches = session.programs.filter((p) => p.plan.expanded.special === 'bench');
  const names = benches.map((p) => p.plan.expanded.name.slice('bench:'.length));
  const data = Buffer.alloc(14);
  let ok = true;
  benches.forEach((b, index) => {
    let iters = 1;
    for (;;) {
      const r = b.prog.testRun({ dataIn: data, repeat: iters });
      session.records.dropping(() => session.readRing());
      const exited = session.exitFlag();
      if (exited === 0n && r.retval !== 0) break;
      const total = r.durationNs * iters;
      if (exited === 0n) {
        const factor = total < 1e3 ? 1000 : total < 1e4 ? 100 : total < 1e5 ? 10 : total < 1e6 ? 2 : 1;
        // (a repeat count past 2^31 would not fit the kernel's u32: report what we have)
        if (factor > 1 && iters * factor < 2 ** 31) {
          iters *= factor;
          continue;
        }
      }
      if (exited !== 0n) {
        process.stderr.write(`ERROR: Benchmark '${names[index]}' failed.\n`);
        session.clearExitFlag();
        ok = false;
      } else report(names, index, r.durationNs, iters);
      break;
    }
  });
  // events the timed runs could not fit in the ring buffer are not the program's to report
  session.forgetLost();
  return ok;
}

/**
 * `--mode test`: run every test probe once (BPF_PROG_TEST_RUN with a 14-byte packet) as current bpftrace does
 * (`bpftrace.cpp` run): a test passes when it returns 0, exits with status 0 (`exit()` alone is fine) and calls no
 * errorf(). `start` is called before each test, then (for a failing test only) what it printed is printed, then
 * `result`. Returns whether every test passed. (bpftrace captures a test's output as text; here its records are
 * held back and replayed.)
 */
export function runTests(
  session: SpecialProbeSession,
  report: {
    start: (names: string[], index: number) => void;
    result: (names: string[], index: number, durationNs: number, passed: boolean[]) => void;
  },
): boolean {
  const tests = session.programs.filter((p) => p.plan.expanded.special === 'test');
  const names = tests.map((p) => p.plan.expanded.name.slice('test:'.length));
  const passed: boolean[] = [];
  tests.forEach((t, index) => {
    let r!: ReturnType<LoadedProgram['testRun']>;
    const records = session.records.collecting(() => {
      r = t.prog.testRun({ dataIn: Buffer.alloc(14), repeat: 1 });
      session.readRing();
    });
    const flag = session.exitFlag();
    const errors = records.filter((d) => d.readUInt32LE(0) === AsyncAction.ERRORF).length;
    passed.push(r.retval === 0 && ((flag >> 8n) & 0xffn) === 0n && errors === 0);
    session.clearExitFlag();
    report.start(names, index);
    // a failing test shows what it printed; a passing one only has its map operations (clear, zero) applied. An
    // exit() ends the test, not the run.
    for (const d of records) {
      const action = d.readUInt32LE(0);
      if (action === AsyncAction.EXIT) continue;
      if (passed[index] && action !== AsyncAction.CLEAR && action !== AsyncAction.ZERO) continue;
      session.records.onRecord(d);
    }
    session.flush();
    report.result(names, index, r.durationNs, passed);
  });
  session.forgetLost();
  return passed.every((p) => p);
}
