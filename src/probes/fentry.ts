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
import type { RecordField, SType } from '../lang/types.js';
import { kallsyms } from '../symbols/kallsyms.js';
import { attachPointError, closestNames, didYouMean } from './errors.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { attachTracing } from './perf-attach.js';
import { type AttachedProbe, BPF_ATTACH_TYPE, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

export class FentryProbe implements ExpandedProbe {
  readonly progType = BPF_PROG_TYPE.TRACING;
  readonly expectedAttachType: number;
  readonly name: string;
  readonly args: SType;
  readonly regs: { args: number[]; ret: number };

  constructor(
    readonly attachPoint: AttachPoint,
    readonly provider: 'fentry' | 'fexit',
    readonly func: string,
    readonly attachBtfId: number,
    params: { name: string; typeId: number }[],
    btf: Btf,
  ) {
    this.expectedAttachType = provider === 'fentry' ? BPF_ATTACH_TYPE.TRACE_FENTRY : BPF_ATTACH_TYPE.TRACE_FEXIT;
    this.name = `${provider}:${func}`;
    const fields: RecordField[] = params.map((p, i) => ({ name: p.name, type: btfType(btf, p.typeId), offset: i * 8 }));
    this.args = { kind: 'record', name: `struct ${provider}:${func}_args`, size: fields.length * 8, fields };
    this.regs = { args: params.map((_, i) => i * 8), ret: params.length * 8 };
  }

  get retprobe(): boolean {
    return this.provider === 'fexit';
  }

  attach(progFd: number): AttachedProbe {
    return attachTracing(progFd);
  }
}

/** Kernel function names that BTF describes (from kallsyms code symbols, checked against BTF lazily). */
function kernelFunctionNames(): string[] {
  const names = new Set<string>();
  for (const e of kallsyms().symbols()) if ((e.type === 't' || e.type === 'T') && !e.module) names.add(e.name);
  return [...names].sort();
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
    if (ap.parts.length < 1 || ap.parts.length > 2 || ap.parts.some((p) => p === '')) {
      throw attachPointError(ap, `${this.kind} probe type requires 1 or 2 arguments: ${this.kind}:[MODULE:]FUNCTION`);
    }
    if (!hasFeature('fentry')) {
      throw attachPointError(
        ap,
        `${this.kind} probes are not available: this kernel refuses BPF trampoline programs (fentry/fexit)`,
        `use ${this.kind === 'fentry' ? 'kprobe' : 'kretprobe'}:${ap.parts[ap.parts.length - 1]} or a tracepoint instead`,
      );
    }
    const spec = ap.parts[ap.parts.length - 1]!;
    const btf = Btf.vmlinux();
    const isFunc = (n: string): boolean => btf.findType(n, BtfKind.FUNC) !== undefined;
    let names: string[];
    if (hasWildcard(spec)) {
      const re = globToRegExp(spec);
      names = kernelFunctionNames().filter((n) => re.test(n) && isFunc(n));
      if (names.length === 0) throw attachPointError(ap, `No matches for ${this.kind}:${spec}`);
    } else {
      if (!isFunc(spec)) {
        throw attachPointError(
          ap,
          `No BTF found for ${spec}`,
          didYouMean(closestNames(spec, kernelFunctionNames()).map((n) => `${this.kind}:${n}`)),
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

  list(search: string, verbose: boolean): string[] {
    if (!hasFeature('fentry')) return [];
    const re = globToRegExp(search || '*');
    const btf = Btf.vmlinux();
    const out: string[] = [];
    for (const n of kernelFunctionNames()) {
      if (!re.test(n)) continue;
      const id = btf.findType(n, BtfKind.FUNC);
      if (id === undefined) continue;
      out.push(`${this.kind}:${n}`);
      if (verbose)
        for (const p of btf.funcProto(btf.refType(id)).params) out.push(`    ${btf.typeName(p.typeId)} ${p.name}`);
    }
    return out;
  }
}
