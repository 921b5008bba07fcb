/**
 * The `rawtracepoint` provider (alias `rt`): `rawtracepoint:EVENT` (e.g. `rawtracepoint:sched_switch`), with
 * wildcards over the kernel's tracepoint names. As in current bpftrace, raw tracepoints are attached as BTF-typed
 * tracepoints (`tp_btf`: BPF_PROG_TYPE_TRACING with expected attach type BPF_TRACE_RAW_TP and `attach_btf_id` =
 * the `btf_trace_<event>` typedef), so `args.NAME` has the tracepoint's real C argument names and types from BTF
 * (`args.prev->pid` in sched_switch), and `arg0..argN` are the raw u64 arguments. Attach is
 * BPF_RAW_TRACEPOINT_OPEN, owned by a file descriptor (nothing in tracefs).
 */
import { existsSync } from 'node:fs';
import { Btf } from '../kernel/btf.js';
import { systemTracefs } from '../kernel/tracefs.js';
import type { AttachPoint } from '../lang/ast.js';
import { btfType } from '../lang/btf-types.js';
import type { RecordField, SType } from '../lang/types.js';
import { attachPointError, closestNames, didYouMean, NO_VALID_ATTACH_POINTS } from './errors.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { attachTracing } from './perf-attach.js';
import { type AttachedProbe, BPF_ATTACH_TYPE, BPF_PROG_TYPE, type ExpandedProbe, type ProbeProvider } from './types.js';

/** Tracepoint event names known to the kernel (from tracefs), without categories. */
function eventNames(): string[] {
  const names = new Set<string>();
  for (const list of systemTracefs().events().values()) for (const e of list) names.add(e);
  return [...names].sort();
}

export class RawTracepointProbe implements ExpandedProbe {
  readonly provider = 'rawtracepoint';
  readonly progType = BPF_PROG_TYPE.TRACING;
  readonly expectedAttachType = BPF_ATTACH_TYPE.TRACE_RAW_TP;
  readonly name: string;
  readonly args: SType;
  /** arg0..argN: the raw u64 arguments at ctx[i]. */
  readonly regs: { args: number[]; ret: number };

  constructor(
    readonly attachPoint: AttachPoint,
    readonly event: string,
    readonly attachBtfId: number,
    params: { name: string; typeId: number }[],
    btf: Btf,
  ) {
    this.name = `rawtracepoint:${event}`;
    const fields: RecordField[] = params.map((p, i) => ({ name: p.name, type: btfType(btf, p.typeId), offset: i * 8 }));
    this.args = { kind: 'record', name: `struct rawtracepoint:${event}_args`, size: fields.length * 8, fields };
    this.regs = { args: params.map((_, i) => i * 8), ret: -1 };
  }

  attach(progFd: number): AttachedProbe {
    return attachTracing(progFd);
  }
}

export class RawTracepointProvider implements ProbeProvider {
  readonly names = ['rawtracepoint', 'rt'] as const;
  readonly supported = true;
  readonly listed = true;

  expand(ap: AttachPoint): ExpandedProbe[] {
    // `rawtracepoint:module:event` names the module; the event name is what matters for BTF lookup.
    const spec = ap.parts[ap.parts.length - 1];
    if (!spec || ap.parts.length > 2)
      throw attachPointError(ap, 'rawtracepoint probe type requires 1 argument: rawtracepoint:EVENT');
    // the module must be vmlinux or a loaded module with BTF (bpftrace: "No matches for rawtracepoint MOD:EVENT")
    const module = ap.parts.length === 2 ? ap.parts[0]! : undefined;
    if (
      module !== undefined &&
      module !== 'vmlinux' &&
      !hasWildcard(module) &&
      !existsSync(`/sys/kernel/btf/${module}`)
    )
      throw attachPointError(
        ap,
        `No matches for rawtracepoint ${module}:${spec}.`,
        `no module '${module}' with BTF is loaded`,
      );
    const btf = Btf.vmlinux();
    let names: string[];
    if (hasWildcard(spec)) {
      const re = globToRegExp(spec);
      names = eventNames().filter((n) => re.test(n) && btf.typedefId(`btf_trace_${n}`) !== undefined);
      if (names.length === 0) throw attachPointError(ap, `No matches for rawtracepoint ${spec}.`);
    } else {
      if (btf.typedefId(`btf_trace_${spec}`) === undefined) {
        // current bpftrace expands `rawtracepoint:EVENT` over the modules, leaving the probe without attach points
        // (ast/passes/probe_prune.cpp's wording; compiler.ts rewords it for missing_probes = warn)
        throw attachPointError(
          ap,
          NO_VALID_ATTACH_POINTS,
          didYouMean(closestNames(spec, eventNames()).map((n) => `rawtracepoint:${n}`)),
        );
      }
      names = [spec];
    }
    return names.map((n) => {
      const id = btf.typedefId(`btf_trace_${n}`)!;
      const params = btf.btfTraceArgs(n) ?? [];
      return new RawTracepointProbe(ap, n, id, params, btf);
    });
  }

  /**
   * `-l rawtracepoint:[MODULE:]EVENT` lines as current bpftrace prints them, `rawtracepoint:vmlinux:EVENT` (the
   * BTF the event's type comes from; bpfscope reads vmlinux's only). A search without a module matches the event.
   */
  list(search: string, verbose: boolean): string[] {
    const colon = search.indexOf(':');
    const moduleRe = globToRegExp(colon < 0 ? '*' : search.slice(0, colon) || '*');
    const re = globToRegExp((colon < 0 ? search : search.slice(colon + 1)) || '*');
    if (!moduleRe.test('vmlinux')) return [];
    const btf = Btf.vmlinux();
    const out: string[] = [];
    for (const n of eventNames()) {
      if (!re.test(n) || btf.typedefId(`btf_trace_${n}`) === undefined) continue;
      out.push(`rawtracepoint:vmlinux:${n}`);
      if (verbose) for (const p of btf.btfTraceArgs(n) ?? []) out.push(`    ${btf.typeName(p.typeId)} ${p.name}`);
    }
    return out;
  }
}
