/**
 * `bpfscope -e PROGRAM` / `bpfscope FILE`: run a program with bpftrace's command-line behaviour on top of
 * `runtime/tracer.ts` (which cleans up on every exit path: exit(), Ctrl-C, SIGTERM, the -c command ending, errors).
 */
import { openSync, readFileSync } from 'node:fs';
import { LOG_LEVEL_STATS } from '../bpf/program.js';
import { BpfscopeError } from '../errors.js';
import { strerror } from '../kernel/ffi.js';
import { formatDiagnostic, type SourceFile } from '../lang/diagnostics.js';
import { createOutput } from '../runtime/output/index.js';
import { OutputSink } from '../runtime/output/sink.js';
import { codegenOnly } from '../runtime/codegen-only.js';
import { NoProbesToAttach, Tracer } from '../runtime/tracer.js';
import type { CliOptions } from './args.js';
import { setReportSource } from './report.js';

/** Run a program; resolves with the process exit code. */
export async function runProgram(opts: CliOptions): Promise<number> {
  const source = readSource(opts);
  setReportSource(source);
  const debug = opts.debug.size ? await import('./debug.js') : undefined;
  if (opts.mode === 'codegen') return codegenMode(opts, source, debug);
  const fd = opts.outputFile ? openOutput(opts.outputFile) : 1;
  let tracer: Tracer | undefined;
  let brokenPipe = false;
  // A reader that goes away (`bpfscope ... | head`) ends the run, as it does bpftrace's.
  // -B none: every write goes out at once; line and full: written after each batch of events (and when 64 KiB fill)
  const sink = new OutputSink(fd, {
    ...(opts.buffering === 'none' ? { bufferSize: 0 } : {}),
    name: opts.outputFile ? `output file: "${opts.outputFile}"` : 'stdout',
    onBrokenPipe: () => {
      brokenPipe = true;
      tracer?.stop();
    },
  });
  const output = createOutput(opts.format, sink);
  const verifierLog = opts.debug.has('verifier');
  try {
    tracer = await Tracer.start({
      source,
      output,
      positional: opts.positional,
      named: opts.named,
      quiet: opts.quiet,
      unsafe: opts.unsafe,
      helperWarnings: opts.helperWarnings,
      includeFiles: opts.includeFiles,
      includeDirs: opts.includeDirs,
      noWarnings: opts.noWarnings,
      ...(opts.command !== undefined ? { command: opts.command } : {}),
      ...(opts.pid !== undefined ? { pid: opts.pid } : {}),
      ...(opts.verbose || verifierLog ? { logLevel: LOG_LEVEL_STATS | (verifierLog ? 2 : 0) } : {}),
      onCompiled: (result) => {
        if (!opts.noWarnings) for (const w of result.warnings) process.stderr.write(`${formatDiagnostic(w, source)}\n`);
        if (opts.debug.has('ast')) debug?.printDebugAst(result.ast, result.types);
        if (opts.debug.has('ir')) debug?.printDebugIr(result.compiled);
      },
      onLoaded: (name, prog, insns) => {
        if (opts.debug.has('insns')) debug?.printDebugInsns(name, insns);
        if (verifierLog && prog.log) process.stderr.write(`\nVerifier log for ${name}:\n${prog.log}\n`);
        else if (opts.verbose) {
          const info = prog.info();
          process.stderr.write(`${name}: ${insns.length} instructions, ${info.verifiedInsns} verified\n`);
        }
      },
      ...(opts.probeFilter ? { probeFilter: opts.probeFilter } : {}),
      ...(opts.dryRun ? { dryRun: true } : {}),
      ...(opts.mode === 'bench' ? { bench: true } : {}),
      ...(opts.mode === 'test' ? { test: true } : {}),
    });
  } catch (e) {
    if (e instanceof NoProbesToAttach) return 1;
    throw e;
  }
  // --dry-run: everything loaded and attached, and already detached again
  if (opts.dryRun) return 0;
  // SIGINT/SIGTERM while the reader of stdout is stalled (`| sleep 100`): the run ends at once, dropping what it did
  // not take (reported at the end) instead of waiting for it (bpftrace waits). Listening only from here: before
  // Tracer.start has its own handlers, a listener would keep Node from ending on Ctrl-C.
  const dropIfStalled = (): void => void sink.abandonIfStalled();
  process.on('SIGINT', dropIfStalled);
  process.on('SIGTERM', dropIfStalled);
  try {
    if (!brokenPipe) await tracer.wait();
    tracer.finish();
    // bpftrace dies of SIGPIPE there; we exit with the shell's code for it (128 + 13)
    return brokenPipe ? 141 : tracer.exitCode;
  } finally {
    // a Ctrl-C during the last steps (END has run, or the run is being torn down) is ignored, not fatal: the process
    // ends on its own a moment later with the run's status, as bpftrace does (tests/runtime/signals "sigint quit")
    process.on('SIGINT', () => {});
    process.on('SIGTERM', () => {});
    tracer.close();
    sink.settle();
    if (sink.dropped > 0) {
      process.stderr.write(`Lost ${sink.dropped} bytes of output: the reader of stdout had stopped reading\n`);
    }
  }
}

export function readSource(opts: CliOptions): SourceFile {
  if (opts.program !== undefined) return { name: 'stdin', text: opts.program };
  const file = opts.scriptFile!;
  try {
    return { name: file, text: readFileSync(file === '-' ? 0 : file, 'utf8') };
  } catch (e) {
    throw new BpfscopeError(
      `failed to open file '${file}': ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'No such file or directory' : (e as Error).message}`,
    );
  }
}

/** `-o FILE`. @throws BpfscopeError `Failed to open output file: "FILE": <strerror>` (bpftrace's message). */
function openOutput(path: string): number {
  try {
    return openSync(path, 'w');
  } catch (e) {
    const errno = (e as NodeJS.ErrnoException).errno;
    const why = errno !== undefined ? strerror(Math.abs(errno)) : (e as Error).message;
    throw new BpfscopeError(`Failed to open output file: "${path}": ${why}`);
  }
}

/**
 * `--mode codegen`: compile to BPF instructions, print warnings (and `-d ast/ir`, and with `-v` each program's
 * size), load nothing. `-c` is not started; `-p` only sets the filter the programs would apply.
 */
function codegenMode(opts: CliOptions, source: SourceFile, debug: typeof import('./debug.js') | undefined): number {
  const { result, programs } = codegenOnly(source, {
    positional: opts.positional,
    named: opts.named,
    ...(opts.unsafe ? { unsafe: true } : {}),
    ...(opts.helperWarnings ? { helperWarnings: true } : {}),
    ...(opts.includeFiles.length ? { includeFiles: opts.includeFiles } : {}),
    ...(opts.includeDirs.length ? { includeDirs: opts.includeDirs } : {}),
    ...(opts.pid !== undefined ? { pid: opts.pid } : {}),
  });
  if (!opts.noWarnings) for (const w of result.warnings) process.stderr.write(`${formatDiagnostic(w, source)}\n`);
  if (opts.debug.has('ast')) debug?.printDebugAst(result.ast, result.types);
  if (opts.debug.has('ir')) debug?.printDebugIr(result.compiled);
  if (opts.verbose) for (const p of programs) process.stderr.write(`${p.probe}: ${p.insnSlots} instructions\n`);
  return 0;
}
