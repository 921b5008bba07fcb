/**
 * bpf(2) commands, each building a zeroed `union bpf_attr` at the offsets of `include/uapi/linux/bpf.h` (checked on
 * the development kernel, see KERNEL.md). These are thin, typed calls: objects (maps, programs) that own their file
 * descriptors live in `src/bpf/`.
 *
 * Errors: a failed command throws {@link KernelError} named `bpf(BPF_<CMD>)`; EPERM/EACCES from an unprivileged
 * process become the one sentence of kernel/privileges.ts ("bpfscope needs root (or CAP_BPF and CAP_PERFMON): this
 * process lacks CAP_BPF"). Expected
 * outcomes (a missing key, the end of a map walk) are return values, not errors. A program the verifier rejects
 * throws {@link VerifierError} with the verifier log.
 */
export { BPF_ANY, BPF_ATTR_SIZE, BPF_EXIST, BPF_NOEXIST, BpfCmd, bpfError, cString, isPrivileged } from './bpf-attr.js';
export * from './bpf-map.js';
export * from './bpf-prog.js';
export * from './bpf-link.js';
export * from './bpf-info.js';
