/**
 * The `iter` provider (alias `it`): `iter:NAME` and `iter:NAME:PIN` run a BPF iterator (bpftrace `docs/language.md`,
 * "iter"): the program is BPF_PROG_TYPE_TRACING with expected attach type BPF_TRACE_ITER and `attach_btf_id` = the
 * kernel's `bpf_iter_NAME` BTF function; `ctx` is a `struct bpf_iter__NAME *` (`ctx.meta`, `ctx.task`, and for
 * task_file `ctx.fd`/`ctx.file`, for task_vma `ctx.vma`). The kernel calls the program once per object (every task,
 * every open file of every task, ...), then once more with the object pointer NULL.
 *
 * Attaching is BPF_LINK_CREATE; running is BPF_ITER_CREATE on the link and read(2) on the new fd until it returns 0:
 * what the program printed with `printf` (bpf_seq_printf, gen-calls.ts) is the data read. As current bpftrace
 * (`src/bpftrace.cpp` run_iter), the run reads the iterator to its end once and then ends (END probes run, maps are
 * printed); `iter:NAME:PIN` pins the link instead, at `/sys/fs/bpf/PIN` (or PIN itself when it starts with `/`), and
 * prints `Program pinned to PATH`: each `cat` of that file runs the program again. `-p PID` limits the task
 * iterators to that process (bpf_iter_link_info.task.pid).
 */
import { Btf, BtfKind } from '../kernel/btf.js';
import { iterCreate, linkCreate, objPin } from '../kernel/bpf.js';
import { close as closeFd, kernelError, read } from '../kernel/ffi.js';
import type { AttachPoint } from '../lang/ast.js';
import type { Diagnostic } from '../lang/diagnostics.js';
import { attachPointError, closestNames, didYouMean } from './errors.js';
import { globToRegExp, hasWildcard } from './glob.js';
import {
  type AttachedProbe,
  type AttachOptions,
  BPF_PROG_TYPE,
  type ExpandedProbe,
  type ProbeProvider,
} from './types.js';

/** `enum bpf_attach_type` BPF_TRACE_ITER (include/uapi/linux/bpf.h). */
export const BPF_TRACE_ITER = 28;

const STRUCT_PREFIX = 'bpf_iter__';
const FUNC_PREFIX = 'bpf_iter_';

/**
 * The iterators this kernel offers, sorted: the names NAME of the BTF structs `bpf_iter__NAME` (the contexts) that
 * have a `bpf_iter_NAME` BTF function to attach to (bpftrace's BTF::get_all_iters, which also skips the verifier's
 * `bpf_iter__task__safe_trusted`).
 */
export function kernelIterators(btf: Btf = Btf.vmlinux()): string[] {
  const out: string[] = [];
  for (let id = 1; id <= btf.count; id++) {
    if (btf.kind(id) !== BtfKind.STRUCT) continue;
    const n = btf.name(id);
    if (!n.startsWith(STRUCT_PREFIX) || n.endsWith('__safe_trusted')) continue;
    const name = n.slice(STRUCT_PREFIX.length);
    if (btf.findType(FUNC_PREFIX + name, BtfKind.FUNC) !== undefined) out.push(name);
  }
  return out.sort();
}

/** The attachment of an iter probe: its link, which {@link run} reads once or pins. */
export class IterAttachment implements AttachedProbe {
  private linkFd: number;

  constructor(
    linkFd: number,
    /** Where to pin the link instead of reading it (absolute), or undefined. */
    readonly pinPath: string | undefined,
  ) {
    this.linkFd = linkFd;
  }

  /**
   * Read the iterator to its end, passing each chunk to `write` (the program's printf output, as the kernel
   * formatted it); or, for `iter:NAME:PIN`, pin the link and write `Program pinned to PATH\n`.
   * @throws KernelError when the kernel refuses (e.g. EEXIST for a pin path that exists, E2BIG when one object's
   * output is larger than the kernel's seq_file buffer)
   */
  run(write: (chunk: Buffer) => void): void {
    if (this.linkFd < 0) throw new Error('iter: the probe is detached');
    if (this.pinPath !== undefined) {
      objPin(this.linkFd, this.pinPath);
      write(Buffer.from(`Program pinned to ${this.pinPath}\n`));
      return;
    }
    const fd = iterCreate(this.linkFd);
    try {
      const buf = Buffer.alloc(64 * 1024);
      for (;;) {
        const n = read(fd, buf);
        if (n < 0) throw kernelError('read(bpf iterator)', -n);
        if (n === 0) break;
        write(Buffer.from(buf.subarray(0, n)));
      }
    } finally {
      closeFd(fd);
    }
  }

  close(): void {
    if (this.linkFd >= 0) {
      closeFd(this.linkFd);
      this.linkFd = -1;
    }
  }
}

export class IterProbe implements ExpandedProbe {
  readonly provider = 'iter';
  readonly progType = BPF_PROG_TYPE.TRACING;
  readonly expectedAttachType = BPF_TRACE_ITER;
  readonly name: string;
  readonly args = null;

  constructor(
    readonly attachPoint: AttachPoint,
    /** The iterator's name (`task`, `task_file`, ...): the context is `struct bpf_iter__NAME`. */
    readonly iter: string,
    readonly attachBtfId: number,
    /** `iter:NAME:PIN`: the absolute pin path. */
    readonly pinPath: string | undefined,
  ) {
    this.name = `iter:${iter}`;
  }

  attach(progFd: number, opts: AttachOptions = {}): AttachedProbe {
    const link = linkCreate(progFd, 0, BPF_TRACE_ITER, { kind: 'iter', ...(opts.pid ? { pid: opts.pid } : {}) });
    return new IterAttachment(link, this.pinPath);
  }
}

/** Whether an attachment is an iter probe's (runtime: read it once attached). */
export function isIterAttachment(a: AttachedProbe): a is IterAttachment {
  return a instanceof IterAttachment;
}

export class IterProvider implements ProbeProvider {
  readonly names = ['iter', 'it'] as const;
  readonly supported = true;
  readonly listed = true;

  /**
   * `iter:NAME[:PIN]`, with bpftrace's errors (attachpoint_passes.cpp): no wildcards, one or two fields, an iterator
   * this kernel has.
   */
  expand(ap: AttachPoint): ExpandedProbe[] {
    if (ap.parts.length < 1 || ap.parts.length > 2)
      throw attachPointError(ap, 'iter probe type takes 2 arguments (1 optional)');
    if (ap.parts.some((p) => hasWildcard(p))) throw attachPointError(ap, 'iter probe type does not support wildcards');
    const name = ap.parts[0]!;
    if (name === '') throw attachPointError(ap, "iter should specify a iterator's name");
    const pin = ap.parts[1];
    if (pin === '') throw attachPointError(ap, 'iter probe: the pin path is empty');
    const btf = Btf.vmlinux();
    const id = btf.findType(FUNC_PREFIX + name, BtfKind.FUNC);
    if (id === undefined || btf.findType(STRUCT_PREFIX + name, BtfKind.STRUCT) === undefined) {
      const names = kernelIterators(btf);
      throw attachPointError(
        ap,
        `iter ${name} not available for your kernel version.`,
        didYouMean(closestNames(name, names).map((n) => `iter:${n}`)),
      );
    }
    const pinPath = pin === undefined ? undefined : pin.startsWith('/') ? pin : `/sys/fs/bpf/${pin}`;
    return [new IterProbe(ap, name, id, pinPath)];
  }

  /**
   * `iter:NAME` for each iterator of the kernel matching `search` (a glob); with `-v`, the context's fields after
   * `meta` as `bpftrace -lv` prints them (the `bpf_iter_NAME` function's parameters after the first).
   */
  list(search: string, verbose: boolean): string[] {
    const re = globToRegExp(search || '*');
    const btf = Btf.vmlinux();
    const out: string[] = [];
    for (const n of kernelIterators(btf)) {
      if (!re.test(n)) continue;
      out.push(`iter:${n}`);
      if (!verbose) continue;
      const id = btf.findType(FUNC_PREFIX + n, BtfKind.FUNC)!;
      const params = btf.funcProto(btf.refType(id)).params.slice(1);
      for (const p of params) out.push(`    ${btf.typeName(p.typeId)} ${p.name}`);
    }
    return out;
  }
}

/**
 * A program with an iter probe runs it once and ends (bpftrace's run_iter, which expects the iter probe to be the
 * only one it attaches): any other probe than BEGIN/END next to it, or a second iter probe, is an error at that
 * probe's attach point. Returns the errors (empty when the program is fine).
 */
export function iterCompanionErrors(
  probes: readonly Pick<ExpandedProbe, 'provider' | 'special' | 'attachPoint'>[],
): Diagnostic[] {
  const first = probes.find((p) => p.provider === 'iter');
  if (!first) return [];
  return probes
    .filter((p) => p !== first && p.special !== 'begin' && p.special !== 'end')
    .map((p) => ({
      severity: 'error' as const,
      message:
        p.provider === 'iter'
          ? 'only one iter probe is allowed in a program: it is read once, then the run ends'
          : `an iter probe cannot be used with ${p.provider} probes: the iterator is read once, then the run ends (only begin and end may accompany it)`,
      pos: p.attachPoint.pos,
    }));
}
