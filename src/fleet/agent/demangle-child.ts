/**
 * C++ and Rust names demangled in a short-lived child process, so that the long-lived agent never instantiates the
 * demangler's WebAssembly (symbols/demangle.ts). In the agent's process it cost ~2 MiB of RSS, and with it ~3 MiB of
 * node's own code pages: the module's compilation and its JS-to-wasm wrappers run V8's optimizing compiler, which
 * the agent otherwise does not use (its launcher starts it with `--max-opt=1`; bench/results/agent-issue15.md
 * section 15).
 *
 * The agent's resolver leaves names as they are; {@link FrameDemangler} gathers a period's new mangled names (C++
 * `_Z...`, Rust `_R...`: demangle.ts's isMangled), has one child demangle them all, and gives each new stack frames
 * with the demangled names. Names are cached across periods, so a child runs only in a period that meets a name
 * never seen before: at start and when a new program runs. The output is demangle.ts's, the same as every other
 * command's (bpftrace's `cpp_demangle`, default on).
 *
 * The stacks of the agent's own processes (itself and its last few demangling children) keep their names as the
 * binary has them: each child is node starting up, and its stacks' V8 names, new each time, would ask for another
 * child in the next period, one a period for ever (measured: a batch in each of 6 periods, ~0.1 s of CPU each).
 *
 * The child is this node (`process.execPath` with the agent's V8 flags) running dist/bundle/demangle-child.cjs
 * (src/cli/demangle-child-main.ts: the demangler and this module's {@link runDemangleChild}, nothing else; ~0.08 s of
 * CPU for a batch here, of which ~0.07 s is node's own start). It reads names separated by NUL bytes on stdin until
 * EOF and writes as many demangled names, NUL-separated, on stdout, and exits 0; when the demangler cannot be loaded
 * it writes why on stderr and exits 1 (child-process.ts runs it).
 */
import { BpfscopeError } from '../../errors.js';
import type { Frame } from '../../symbols/frames.js';
import { demangle, demanglerStatus, isMangled, loadDemangler } from '../../symbols/demangle.js';
import { readStdin, runChild, writeStdout } from './child-process.js';

/** How long a child may take, ms (~0.1 s for a few thousand names here; a loaded machine several times that). */
const CHILD_TIMEOUT_MS = 30_000;
/** Names per child at most (a period's new names beyond it wait for the next period). */
const MAX_BATCH = 20_000;
/** Demangling children whose stacks keep their names: one a period at most, so the last 8 periods' at least. */
const OWN_CHILDREN = 8;
/** Distinct names kept; beyond it the oldest quarter is forgotten (and demangled again if met again). */
const MAX_CACHED = 65_536;

/** The child's side: stdin's NUL-separated names demangled to stdout. Resolves with the exit status. */
export async function runDemangleChild(): Promise<number> {
  const names = (await readStdin()).toString('utf8').split('\0');
  if (!(await loadDemangler())) {
    process.stderr.write(`${demanglerStatus().reason ?? 'the demangler cannot be loaded'}\n`);
    return 1;
  }
  await writeStdout(names.map((n) => demangle(n)).join('\0'));
  return 0;
}

/**
 * The agent's side: the demangled forms of `names` (in order; a name that is not mangled or not understood comes
 * back as it is), from a child running `script` (demangle-child.cjs, see the module comment); `spawned` is told the
 * child's pid.
 * @throws BpfscopeError when the child cannot start, fails (its message), is killed, takes over 30 s or answers with
 * another number of names
 */
export async function demangleInChild(
  names: readonly string[],
  script: string,
  spawned: (pid: number) => void = () => {},
): Promise<string[]> {
  const out = await runChild({
    args: [...process.execArgv, script],
    input: names.join('\0'),
    what: 'the demangling process',
    timeoutMs: CHILD_TIMEOUT_MS,
    spawned,
  });
  const got = out.toString('utf8').split('\0');
  if (got.length !== names.length) {
    throw new BpfscopeError(`the demangling process answered ${got.length} names for ${names.length}`);
  }
  return got;
}

/**
 * Demangles the names of the profiler's new stacks in batches (see the module comment). Frames are shared between
 * stacks and periods: each frame with a mangled name gets one renamed copy, shared the same way.
 */
export class FrameDemangler {
  /** Children run (batches of new names). */
  batches = 0;
  /** Names demangled by the children. */
  names = 0;
  /** Batches that failed (their names stay mangled; the profiler symbolizes those stacks again when next met). */
  failures = 0;
  private readonly cache = new Map<string, string>();
  private readonly renamed = new WeakMap<Frame, Frame>();
  /** This process and its last OWN_CHILDREN demangling children (see the module comment). */
  private readonly own: number[] = [process.pid];

  /**
   * @param batch demangles a list of names (demangleInChild), telling `spawned` the pid of a process it starts; a
   * rejection leaves the batch's names as they are
   * @param onError told each failed batch's error (the agent logs the first)
   */
  constructor(
    private readonly batch: (names: readonly string[], spawned: (pid: number) => void) => Promise<string[]>,
    private readonly onError: (e: Error) => void = () => {},
  ) {}

  /** Whether `pid` is the agent's own process or one of its last demangling children (their names stay). */
  isOwn(pid: number): boolean {
    return this.own.includes(pid);
  }

  /**
   * `stacks` with demangled frame names: a stack without a mangled name is returned as it is (the same array), any
   * other as a new array. Runs at most one batch, for the names not cached yet.
   */
  async rename(stacks: readonly (readonly Frame[])[]): Promise<(readonly Frame[])[]> {
    const fresh = new Set<string>();
    for (const s of stacks)
      for (const f of s)
        if (f.name !== undefined && isMangled(f.name) && !this.renamed.has(f) && !this.cache.has(f.name))
          fresh.add(f.name);
    if (fresh.size > 0) await this.demangleNew([...fresh].slice(0, MAX_BATCH));
    return stacks.map((s) => {
      let copy: Frame[] | undefined;
      s.forEach((f, i) => {
        const g = this.frameFor(f);
        if (g !== f) (copy ??= s.slice())[i] = g;
      });
      return copy ?? s;
    });
  }

  private async demangleNew(names: string[]): Promise<void> {
    this.batches++;
    let got: string[];
    try {
      got = await this.batch(names, (pid) => {
        this.own.push(pid);
        if (this.own.length > 1 + OWN_CHILDREN) this.own.splice(1, 1);
      });
    } catch (e) {
      this.failures++;
      this.onError(e as Error);
      return;
    }
    this.names += names.length;
    if (this.cache.size + names.length > MAX_CACHED) {
      let drop = this.cache.size >>> 2;
      for (const k of this.cache.keys()) {
        if (drop-- <= 0) break;
        this.cache.delete(k);
      }
    }
    names.forEach((n, i) => this.cache.set(n, got[i]!));
  }

  /** `f` with its demangled name (a copy made once per frame), or `f` when its name stays as it is. */
  private frameFor(f: Frame): Frame {
    const done = this.renamed.get(f);
    if (done) return done;
    const d = f.name === undefined ? undefined : this.cache.get(f.name);
    if (d === undefined || d === f.name) return f;
    const g: Frame = { ...f, name: d };
    this.renamed.set(f, g);
    return g;
  }
}
