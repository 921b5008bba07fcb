/**
 * The `fentry`/`fexit` providers (aliases `f`/`fr`, legacy `kfunc`/`kretfunc`): `fentry:FUNCTION`,
 * `fentry:MODULE:FUNCTION`, with wildcards over the kernel functions BTF describes (bpftrace `docs/language.md`).
 * Programs are BPF_PROG_TYPE_TRACING with expected attach type BPF_TRACE_FENTRY/FEXIT and `attach_btf_id` = the
 * function's BTF FUNC id; the context is the u64 argument array, so `args.NAME` has the function's real parameter
 * names and BTF types, and in fexit `retval` is the slot after the last argument. Attached with
 * BPF_RAW_TRACEPOINT_OPEN (a file descriptor; nothing in tracefs).
 *
 * Availability is decided by trying: kernels that refuse fentry (the development VM: EPERM at load) get one clear
 * sentence from the feature probe, pointing at the kprobe or tracepoint alternative.
 */
import { Btf, BtfKind } from '../kernel/btf.js';
import { hasFeature } from '../kernel/features.js';
import type { AttachPoint } from '../lang/ast.js';
import { btfType } from '../lang/btf-types.js';
import { type RecordField, sizeOf, type SType } from '../lang/types.js';
import { attachPointError, closestNames, didYouMean } from './errors.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { btfFuncIds, paramLines, traceableFunctions } from './kernel-funcs.js';
import { attachTracing } from './perf-attach.js';
import { bpfProgramFunctions, targetProgramFd } from './fentry-bpf.js';
import { type AttachedProbe, BPF_ATTACH_TYPE, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

export class FentryProbe implements ExpandedProbe {
  readonly progType = BPF_PROG_TYPE.TRACING;
  readonly expectedAttachType: number;
  readonly name: string;
  readonly args: SType;
  readonly regs: { args: number[]; ret: number };
  readonly attachBtfObjFd?: number;

  constructor(
    readonly attachPoint: AttachPoint,
    readonly provider: 'fentry' | 'fexit',
    readonly func: string,
    readonly attachBtfId: number,
    params: { name: string; typeId: number }[],
    btf: Btf,
    /** A function of a loaded BPF program (`fentry:bpf:ID:NAME`): the program's id and an fd for it; `btf` is its BTF. */
    bpfTarget?: { progId: number; progFd: number },
  ) {
    this.expectedAttachType = provider === 'fentry' ? BPF_ATTACH_TYPE.TRACE_FENTRY : BPF_ATTACH_TYPE.TRACE_FEXIT;
    // bpftrace names an fentry probe with its module (`fentry:vmlinux:vfs_read`: `probe`, `-l PROGRAM`), a BPF
    // program's function with the program's id (`fentry:bpf:123:NAME`)
    this.name = bpfTarget ? `${provider}:bpf:${bpfTarget.progId}:${func}` : `${provider}:vmlinux:${func}`;
    if (bpfTarget) this.attachBtfObjFd = bpfTarget.progFd;
    // the trampoline stores each argument in ceil(size / 8) u64 slots: a struct of 9-16 bytes passed by value (e.g.
    // __sys_bpf's bpfptr_t) takes two, so the arguments after it, and fexit's return value, move up one slot
    // (kernel btf_distill_func_proto / arch_prepare_bpf_trampoline)
    const fields: RecordField[] = [];
    let slot = 0;
    for (const p of params) {
      const type = btfType(btf, p.typeId);
      fields.push({ name: p.name, type, offset: slot * 8 });
      slot += Math.max(1, Math.ceil(sizeOf(type) / 8));
    }
    this.args = { kind: 'record', name: `struct ${provider}:${func}_args`, size: slot * 8, fields };
    this.regs = { args: fields.map((f) => f.offset), ret: slot * 8 };
  }

  get retprobe(): boolean {
    return this.provider === 'fexit';
  }

  attach(progFd: number): AttachedProbe {
    return attachTracing(progFd);
  }
}

/**
 * The kernel functions fentry can attach to, sorted: vmlinux's BTF functions that are traceable
 * (kernel-funcs.ts traceableFunctions), by name with their FUNC id. Module functions need module BTF
 * (`/sys/kernel/btf/MODULE`), which bpfscope does not read yet.
 */
function kernelFunctions(btf: Btf): [string, number][] {
  const ids = btfFuncIds(btf);
  const out: [string, number][] = [];
  for (const n of traceableFunctions()) {
    if (n.includes(':')) continue;
    const id = ids.get(n);
    if (id !== undefined) out.push([n, id]);
  }
  return out;
}

export class FentryProvider implements ProbeProvider {
  readonly supported = true;
  /** A full `-l` shows fentry, not fexit (bpftrace's show_in_kernel_list). */
  readonly listed: boolean;
  readonly names: readonly string[];

  constructor(readonly kind: 'fentry' | 'fexit') {
    this.names = kind === 'fentry' ? ['fentry', 'f', 'kfunc'] : ['fexit', 'fr', 'kretfunc'];
    this.listed = kind === 'fentry';
  }

  expand(ap: AttachPoint): ExpandedProbe[] {
    const onBpf = ap.parts[0] === 'bpf' && (ap.parts.length === 2 || ap.parts.length === 3);
    if (ap.parts.length < 1 || (ap.parts.length > 2 && !onBpf) || ap.parts.some((p) => p === '')) {
      throw attachPointError(ap, `${this.kind} probe type requires 1 or 2 arguments: ${this.kind}:[MODULE:]FUNCTION`);
    }
    if (!hasFeature('fentry')) {
      throw attachPointError(
        ap,
        `${this.kind} probes are not available: this kernel refuses BPF trampoline programs (fentry/fexit)`,
        `use ${this.kind === 'fentry' ? 'kprobe' : 'kretprobe'}:${ap.parts[ap.parts.length - 1]} or a tracepoint instead`,
      );
    }
    if (onBpf) return this.expandBpf(ap);
    const module = ap.parts.length === 2 ? ap.parts[0]! : undefined;
    const spec = ap.parts[ap.parts.length - 1]!;
    const written = `${module !== undefined ? `${module}:` : ''}${spec}`;
    if (module !== undefined && !globToRegExp(module).test('vmlinux')) {
      throw attachPointError(
        ap,
        `${this.kind}:${written}: functions of kernel modules are not supported (bpfscope reads only vmlinux BTF)`,
        `use kprobe:${written} instead`,
      );
    }
    const btf = Btf.vmlinux();
    const funcs = kernelFunctions(btf);
    let names: string[];
    if (hasWildcard(spec)) {
      const re = globToRegExp(spec);
      names = funcs.filter(([n]) => re.test(n)).map(([n]) => n);
      if (names.length === 0) throw attachPointError(ap, `No matches for ${this.kind}:${written}`);
    } else {
      if (!funcs.some(([n]) => n === spec)) {
        // bpftrace's wording (ap_probe_expansion.cpp), which config missing_probes = warn/ignore skips
        throw attachPointError(
          ap,
          `No matches for ${this.kind} ${written}.`,
          didYouMean(
            closestNames(
              spec,
              funcs.map(([n]) => n),
            ).map((n) => `${this.kind}:${n}`),
          ),
        );
      }
      names = [spec];
    }
    return names.map((n) => {
      const id = btf.findType(n, BtfKind.FUNC)!;
      const params = btf.funcProto(btf.refType(id)).params;
      return new FentryProbe(ap, this.kind, n, id, params, btf);
    });
  }

  /**
   * `fentry:bpf:[ID:]FUNC` (FUNC a glob): the matching functions of the loaded BPF programs (of program ID only, when
   * given), each named `fentry:bpf:ID:NAME`, as bpftrace. A glob that matches nothing is "No matches".
   */
  private expandBpf(ap: AttachPoint): ExpandedProbe[] {
    const idText = ap.parts.length === 3 ? ap.parts[1]! : undefined;
    const spec = ap.parts[ap.parts.length - 1]!;
    if (idText !== undefined && !/^\d+$/.test(idText))
      throw attachPointError(ap, `${this.kind}:bpf:${idText}: the program id must be a number`);
    const re = globToRegExp(spec);
    const found = bpfProgramFunctions().filter(
      (f) => (idText === undefined || f.progId === Number(idText)) && re.test(f.name),
    );
    if (found.length === 0) {
      throw attachPointError(ap, `No matches for ${this.kind} bpf:${idText !== undefined ? `${idText}:` : ''}${spec}.`);
    }
    const out: ExpandedProbe[] = [];
    for (const f of found) {
      const progFd = targetProgramFd(f.progId);
      if (progFd === undefined) continue; // unloaded meanwhile
      const params = f.btf.funcProto(f.btf.refType(f.typeId)).params;
      out.push(new FentryProbe(ap, this.kind, f.name, f.typeId, params, f.btf, { progId: f.progId, progFd }));
    }
    return out;
  }

  /**
   * `fentry:vmlinux:NAME` for each traceable vmlinux BTF function whose `vmlinux:NAME` matches `search` (a search
   * without `:` matches NAME in any module, as bpftrace's `*:SEARCH`); with `-v`, its parameters and `retval`.
   */
  list(search: string, verbose: boolean): string[] {
    if (!hasFeature('fentry')) return [];
    const re = globToRegExp(search.includes(':') ? search : `*:${search || '*'}`);
    const btf = Btf.vmlinux();
    const out: string[] = [];
    for (const [n, id] of kernelFunctions(btf)) {
      const full = `vmlinux:${n}`;
      if (!re.test(full)) continue;
      out.push(`${this.kind}:${full}`);
      if (verbose) out.push(...paramLines(btf, id, this.kind));
    }
    return out;
  }
}
