/**
 * `bpfscope --info`: bpftrace's report (`main.cpp` info(), `build_info.cpp`, `bpffeature.cpp` report()) in its
 * layout (System, Build, Kernel helpers, Kernel features, Probe types; `name: yes|no` pairs two to a line in
 * 35-column cells), with what bpfscope itself detects on this kernel (`kernel/features.ts`, each probe a real
 * load or attach). The Build section describes bpfscope, which has no LLVM or libbpf to report.
 */
import { existsSync, readdirSync } from 'node:fs';
import { release, machine, type, version } from 'node:os';
import { Btf, BtfKind } from '../kernel/btf.js';
import { featureDisabled, features, hasHelper, programLoads } from '../kernel/features.js';
import { VERSION } from './args.js';

// include/uapi/linux/bpf.h
const PROG_KPROBE = 2;
const PROG_TRACING = 26;
const ATTACH_TRACE_ITER = 28;
const ATTACH_TRACE_KPROBE_SESSION = 56;
const FUNC_GET_FUNC_IP = 173;
const FUNC_LOOP = 181;
const FUNC_MAP_LOOKUP_PERCPU_ELEM = 195;
const FUNC_KTIME_GET_TAI_NS = 208;
const FUNC_D_PATH = 147;

function hasIterTask(): boolean {
  try {
    const id = Btf.vmlinux().findType('bpf_iter_task', BtfKind.FUNC);
    return id !== undefined && programLoads(PROG_TRACING, { expectedAttachType: ATTACH_TRACE_ITER, attachBtfId: id });
  } catch {
    return false;
  }
}

/** 35-column cells, two `name: value` pairs a line (bpftrace's tabulate). */
function tabulate(rows: [string, string][]): string {
  let out = '';
  for (let i = 0; i < rows.length; i += 2) {
    const [a, b] = [rows[i]!, rows[i + 1]];
    out += `  ${a[0]}: ${a[1]}`.padEnd(35);
    out += b ? `${b[0]}: ${b[1]}`.padEnd(35) : '';
    out += '\n';
  }
  return out;
}

const yn = (b: boolean): string => (b ? 'yes' : 'no');

/** The whole report, ending with a blank line as bpftrace's does. */
export function infoReport(): string {
  const f = features();
  const helper = (id: number): boolean => hasHelper(PROG_KPROBE, id);
  const moduleBtf = existsSync('/sys/kernel/btf') && readdirSync('/sys/kernel/btf').some((n) => n !== 'vmlinux');
  // kernels since 5.2 verify up to a million instructions per program (BPF_COMPLEXITY_LIMIT_INSNS)
  const [maj = 0, min = 0] = release()
    .split('.')
    .map((n) => parseInt(n, 10));
  const insnLimit = maj > 5 || (maj === 5 && min >= 2) ? 1_000_000 : 4096;
  return [
    'System',
    `  OS: ${type()} ${release()} ${version()}`,
    `  Arch: ${machine()}`,
    '',
    'Build',
    `  version: ${VERSION}`,
    '  LLVM: none (bpfscope emits BPF instructions itself)',
    `  Node.js: ${process.version}`,
    '',
    'Kernel helpers',
    tabulate([
      ['dpath', yn(f.fentry && hasHelper(PROG_TRACING, FUNC_D_PATH))],
      ['get_tai_ns', yn(helper(FUNC_KTIME_GET_TAI_NS))],
      ['get_func_ip', yn(helper(FUNC_GET_FUNC_IP))],
      ['lookup_percpu_elem', yn(helper(FUNC_MAP_LOOKUP_PERCPU_ELEM))],
      ['loop', yn(helper(FUNC_LOOP))],
    ]),
    'Kernel features',
    tabulate([
      ['Instruction limit', String(insnLimit)],
      ['btf', yn(f.btf)],
      ['module btf', yn(moduleBtf)],
    ]),
    'Probe types',
    tabulate([
      ['kprobe_multi', yn(f.kprobeMulti)],
      ['uprobe_multi', yn(f.uprobeMulti)],
      [
        'kprobe_session',
        yn(
          !featureDisabled('kprobe_session') &&
            f.kprobeMulti &&
            programLoads(PROG_KPROBE, { expectedAttachType: ATTACH_TRACE_KPROBE_SESSION }),
        ),
      ],
      ['iter', yn(hasIterTask())],
    ]),
    '',
  ].join('\n');
}
