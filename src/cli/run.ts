/**
 * `bpfscope -e PROGRAM` / `bpfscope FILE`: compile, load, attach, stream output, and clean up on every exit path
 * (exit(), Ctrl-C, SIGTERM, the -c command ending, errors).
 */
import { openSync, readFileSync } from 'node:fs';
import { LOG_LEVEL_STATS } from '../bpf/program.js';
import { compile } from '../compiler.js';
import { BpfscopeError } from '../errors.js';
import { formatDiagnostic, type SourceFile } from '../lang/diagnostics.js';
import { createOutput } from '../runtime/output/index.js';
import { OutputSink } from '../runtime/output/sink.js';
import { Session } from '../runtime/session.js';
import type { CliOptions } from './args.js';
import { type StoppedChild, spawnStopped } from './child.js';
import { printDebugAst, printDebugInsns, printDebugIr } from './debug.js';
import { setReportSource } from './report.js';

/** Run a program; resolves with the process exit code. */
export async function runProgram(opts: CliOptions): Promise<number> {
  const source = readSource(opts);
  setReportSource(source);
  let child: StoppedChild | undefined;
  let session: Session | undefined;
  let resumed = false;
  const onSignal = (): void => session?.stop();
  try {
    if (opts.command) child = await spawnStopped(opts.command);
    const result = compile(source, {
      positional: opts.positional,
      ...(child ? { cpid: child.pid } : {}),
    });
    for (const w of result.warnings) process.stderr.write(`${formatDiagnostic(w, source)}\n`);
    const debug = opts.debug.size ? await import('./debug.js') : undefined;
    if (opts.debug.has('ast')) debug?.printDebugAst(result.ast);
    const fd = opts.outputFile ? openOutput(opts.outputFile) : 1;
    const output = createOutput(opts.format, new OutputSink(fd));
    session = new Session(result.compiled, {
      output,
      ...(opts.verbose || opts.debug.has('verifier')
        ? { logLevel: LOG_LEVEL_STATS | (opts.debug.has('verifier') ? 2 : 0) }
        : {}),
      onLoaded: (name, prog, insns) => {
        if (opts.debug.has('insns')) debug?.printDebugInsns(name, insns);
        if (opts.debug.has('verifier') && prog.log) process.stderr.write(`\nVerifier log for ${name}:\n${prog.log}\n`);
        else if (opts.verbose) {
          const info = prog.info();
          process.stderr.write(`${name}: ${insns.length} instructions, ${info.verifiedInsns} verified\n`);
        }
      },
    });
    if (opts.debug.has('ir')) debug?.printDebugIr(result.compiled);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    session.load();
    if (!opts.quiet) output.attachedProbes(session.probeCount);
    if (session.runBegin()) {
      session.attach(opts.pid !== undefined ? { pid: opts.pid } : {});
      if (child) {
        child.resume();
        resumed = true;
        child.exited.then(() => session?.stop());
      }
      if (opts.pid !== undefined) watchPid(opts.pid, () => session?.stop());
      await session.waitForStop();
    }
    session.finish();
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    session?.close();
    if (child && !resumed) child.kill();
  }
}

function readSource(opts: CliOptions): SourceFile {
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

function openOutput(path: string): number {
  try {
    return openSync(path, 'w');
  } catch (e) {
    throw new BpfscopeError(`Failed to open output file '${path}': ${(e as Error).message}`);
  }
}

/** Poll for `pid` to exit (-p): bpftrace stops when the traced process is gone. */
function watchPid(pid: number, onExit: () => void): void {
  const t = setInterval(() => {
    try {
      process.kill(pid, 0);
    } catch {
      clearInterval(t);
      onExit();
    }
  }, 200);
  t.unref();
}
