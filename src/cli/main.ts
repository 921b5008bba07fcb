#!/usr/bin/env node
/**
 * The `bpfscope` command: bpftrace's command line (run a program, list probes). Errors are printed as one clear
 * message (compile errors with file:line:col and a marker) with a non-zero exit; never a stack trace unless
 * BPFSCOPE_DEBUG=1.
 */
import { parseCli, USAGE, VERSION } from './args.js';
import { COMMANDS, subcommandHelp } from './commands.js';

async function main(argv: string[]): Promise<number> {
  const sub = argv[0] !== undefined ? COMMANDS[argv[0]] : undefined;
  if (sub) return (await sub.load())(argv.slice(1));
  const opts = parseCli(argv);
  if (opts.help) {
    process.stdout.write(USAGE + subcommandHelp());
    return 0;
  }
  if (opts.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (opts.noFeatures.length) {
    const { disableFeature } = await import('../kernel/features.js');
    opts.noFeatures.forEach(disableFeature);
  }
  if (opts.debugInfoDirs.length) {
    const { useDebugInfoDirs } = await import('../probes/uprobe-args.js');
    useDebugInfoDirs(opts.debugInfoDirs);
  }
  if (opts.traceableFunctionsFile !== undefined) {
    const { useTraceableFunctionsFile } = await import('../probes/kernel-funcs.js');
    useTraceableFunctionsFile(opts.traceableFunctionsFile);
  }
  if (opts.info) {
    const { infoReport } = await import('./info.js');
    process.stdout.write(infoReport());
    return 0;
  }
  if (opts.list) {
    // listing reads tracefs (root only) and kernel symbols: bpftrace checks privileges before it too
    (await import('../kernel/privileges.js')).requireTracingPrivileges();
    let lines: string[];
    if (opts.listProgram) {
      const [{ readSource }, { listProgramProbes }, { setReportSource }] = await Promise.all([
        import('./run.js'),
        import('./list-program.js'),
        import('./report.js'),
      ]);
      const source = readSource(opts);
      setReportSource(source);
      lines = listProgramProbes(source, opts.verbose, opts.pid);
    } else {
      const { filenameLikeWarning, listProbes } = await import('../probes/list.js');
      const warning = opts.listPattern !== null ? filenameLikeWarning(opts.listPattern) : null;
      if (warning && !opts.noWarnings) process.stderr.write(`WARNING: ${warning}\n`);
      lines = listProbes(opts.listPattern, opts.verbose, opts.pid !== undefined ? { pid: opts.pid } : {});
    }
    // a full listing is larger than a pipe holds: wait until it is written before exiting
    if (lines.length)
      await new Promise<void>((resolve) => process.stdout.write(`${lines.join('\n')}\n`, () => resolve()));
    return 0;
  }
  const { runProgram } = await import('./run.js');
  return runProgram(opts);
}

/**
 * Prints `err` as report.ts does and exits with its status. report.ts is loaded only here, on failure: it pulls in
 * the compiler's and loader's error classes, ~25 ms of module loading that commands such as flamegraph never need.
 */
async function fail(err: unknown): Promise<never> {
  const { reportError } = await import('./report.js');
  process.exit(reportError(err));
}

process.on('uncaughtException', (err) => void fail(err));
process.on('unhandledRejection', (err) => void fail(err));

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Nothing else should keep us alive; exit explicitly so a stray handle cannot hang the tool.
    setImmediate(() => process.exit(code));
  },
  (err) => fail(err),
);
