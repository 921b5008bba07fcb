/**
 * BPF helper function ids, names and argument counts.
 *
 * Ids are positions in the `___BPF_FUNC_MAPPER` list of the kernel's `include/uapi/linux/bpf.h` (1 =
 * `map_lookup_elem` ... 211 = `cgrp_storage_delete`; the list is frozen after 211, new kernel functionality comes
 * as kfuncs). Argument counts are the number of parameters of each helper's prototype in the same header's helper
 * documentation (`bpf-helpers(7)`); arguments go in r1-r5, the result comes back in r0.
 */

/** One BPF helper: `id` (the `imm` of `BPF_CALL`), `name` without the `bpf_` prefix, `args` register count. */
export interface HelperInfo {
  readonly id: number;
  readonly name: string;
  /** Number of argument registers (r1..r{args}) the helper reads; for a variadic helper, its fixed parameters. */
  readonly args: number;
  /** True for helpers taking a variable argument list (only `trace_printk`: up to 3 extra values in r3-r5). */
  readonly variadic: boolean;
}

// [name, argument count] in ___BPF_FUNC_MAPPER order; the id is the position + 1 (0 is BPF_FUNC_unspec).
const TABLE = [
  ['map_lookup_elem', 2],
  ['map_update_elem', 4],
  ['map_delete_elem', 2],
  ['probe_read', 3],
  ['ktime_get_ns', 0],
  ['trace_printk', 2],
  ['get_prandom_u32', 0],
  ['get_smp_processor_id', 0],
  ['skb_store_bytes', 5],
  ['l3_csum_replace', 5],
  ['l4_csum_replace', 5],
  ['tail_call', 3],
  ['clone_redirect', 3],
  ['get_current_pid_tgid', 0],
  ['get_current_uid_gid', 0],
  ['get_current_comm', 2],
  ['get_cgroup_classid', 1],
  ['skb_vlan_push', 3],
  ['skb_vlan_pop', 1],
  ['skb_get_tunnel_key', 4],
  ['skb_set_tunnel_key', 4],
  ['perf_event_read', 2],
  ['redirect', 2],
  ['get_route_realm', 1],
  ['perf_event_output', 5],
  ['skb_load_bytes', 4],
  ['get_stackid', 3],
  ['csum_diff', 5],
  ['skb_get_tunnel_opt', 3],
  ['skb_set_tunnel_opt', 3],
  ['skb_change_proto', 3],
  ['skb_change_type', 2],
  ['skb_under_cgroup', 3],
  ['get_hash_recalc', 1],
  ['get_current_task', 0],
  ['probe_write_user', 3],
  ['current_task_under_cgroup', 2],
  ['skb_change_tail', 3],
  ['skb_pull_data', 2],
  ['csum_update', 2],
  ['set_hash_invalid', 1],
  ['get_numa_node_id', 0],
  ['skb_change_head', 3],
  ['xdp_adjust_head', 2],
  ['probe_read_str', 3],
  ['get_socket_cookie', 1],
  ['get_socket_uid', 1],
  ['set_hash', 2],
  ['setsockopt', 5],
  ['skb_adjust_room', 4],
  ['redirect_map', 3],
  ['sk_redirect_map', 4],
  ['sock_map_update', 4],
  ['xdp_adjust_meta', 2],
  ['perf_event_read_value', 4],
  ['perf_prog_read_value', 3],
  ['getsockopt', 5],
  ['override_return', 2],
  ['sock_ops_cb_flags_set', 2],
  ['msg_redirect_map', 4],
  ['msg_apply_bytes', 2],
  ['msg_cork_bytes', 2],
  ['msg_pull_data', 4],
  ['bind', 3],
  ['xdp_adjust_tail', 2],
  ['skb_get_xfrm_state', 5],
  ['get_stack', 4],
  ['skb_load_bytes_relative', 5],
  ['fib_lookup', 4],
  ['sock_hash_update', 4],
  ['msg_redirect_hash', 4],
  ['sk_redirect_hash', 4],
  ['lwt_push_encap', 4],
  ['lwt_seg6_store_bytes', 4],
  ['lwt_seg6_adjust_srh', 3],
  ['lwt_seg6_action', 4],
  ['rc_repeat', 1],
  ['rc_keydown', 4],
  ['skb_cgroup_id', 1],
  ['get_current_cgroup_id', 0],
  ['get_local_storage', 2],
  ['sk_select_reuseport', 4],
  ['skb_ancestor_cgroup_id', 2],
  ['sk_lookup_tcp', 5],
  ['sk_lookup_udp', 5],
  ['sk_release', 1],
  ['map_push_elem', 3],
  ['map_pop_elem', 2],
  ['map_peek_elem', 2],
  ['msg_push_data', 4],
  ['msg_pop_data', 4],
  ['rc_pointer_rel', 3],
  ['spin_lock', 1],
  ['spin_unlock', 1],
  ['sk_fullsock', 1],
  ['tcp_sock', 1],
  ['skb_ecn_set_ce', 1],
  ['get_listener_sock', 1],
  ['skc_lookup_tcp', 5],
  ['tcp_check_syncookie', 5],
  ['sysctl_get_name', 4],
  ['sysctl_get_current_value', 3],
  ['sysctl_get_new_value', 3],
  ['sysctl_set_new_value', 3],
  ['strtol', 4],
  ['strtoul', 4],
  ['sk_storage_get', 4],
  ['sk_storage_delete', 2],
  ['send_signal', 1],
  ['tcp_gen_syncookie', 5],
  ['skb_output', 5],
  ['probe_read_user', 3],
  ['probe_read_kernel', 3],
  ['probe_read_user_str', 3],
  ['probe_read_kernel_str', 3],
  ['tcp_send_ack', 2],
  ['send_signal_thread', 1],
  ['jiffies64', 0],
  ['read_branch_records', 4],
  ['get_ns_current_pid_tgid', 4],
  ['xdp_output', 5],
  ['get_netns_cookie', 1],
  ['get_current_ancestor_cgroup_id', 1],
  ['sk_assign', 3],
  ['ktime_get_boot_ns', 0],
  ['seq_printf', 5],
  ['seq_write', 3],
  ['sk_cgroup_id', 1],
  ['sk_ancestor_cgroup_id', 2],
  ['ringbuf_output', 4],
  ['ringbuf_reserve', 3],
  ['ringbuf_submit', 2],
  ['ringbuf_discard', 2],
  ['ringbuf_query', 2],
  ['csum_level', 2],
  ['skc_to_tcp6_sock', 1],
  ['skc_to_tcp_sock', 1],
  ['skc_to_tcp_timewait_sock', 1],
  ['skc_to_tcp_request_sock', 1],
  ['skc_to_udp6_sock', 1],
  ['get_task_stack', 4],
  ['load_hdr_opt', 4],
  ['store_hdr_opt', 4],
  ['reserve_hdr_opt', 3],
  ['inode_storage_get', 4],
  ['inode_storage_delete', 2],
  ['d_path', 3],
  ['copy_from_user', 3],
  ['snprintf_btf', 5],
  ['seq_printf_btf', 4],
  ['skb_cgroup_classid', 1],
  ['redirect_neigh', 4],
  ['per_cpu_ptr', 2],
  ['this_cpu_ptr', 1],
  ['redirect_peer', 2],
  ['task_storage_get', 4],
  ['task_storage_delete', 2],
  ['get_current_task_btf', 0],
  ['bprm_opts_set', 2],
  ['ktime_get_coarse_ns', 0],
  ['ima_inode_hash', 3],
  ['sock_from_file', 1],
  ['check_mtu', 5],
  ['for_each_map_elem', 4],
  ['snprintf', 5],
  ['sys_bpf', 3],
  ['btf_find_by_name_kind', 4],
  ['sys_close', 1],
  ['timer_init', 3],
  ['timer_set_callback', 2],
  ['timer_start', 3],
  ['timer_cancel', 1],
  ['get_func_ip', 1],
  ['get_attach_cookie', 1],
  ['task_pt_regs', 1],
  ['get_branch_snapshot', 3],
  ['trace_vprintk', 4],
  ['skc_to_unix_sock', 1],
  ['kallsyms_lookup_name', 4],
  ['find_vma', 5],
  ['loop', 4],
  ['strncmp', 3],
  ['get_func_arg', 3],
  ['get_func_ret', 2],
  ['get_func_arg_cnt', 1],
  ['get_retval', 0],
  ['set_retval', 1],
  ['xdp_get_buff_len', 1],
  ['xdp_load_bytes', 4],
  ['xdp_store_bytes', 4],
  ['copy_from_user_task', 5],
  ['skb_set_tstamp', 3],
  ['ima_file_hash', 3],
  ['kptr_xchg', 2],
  ['map_lookup_percpu_elem', 3],
  ['skc_to_mptcp_sock', 1],
  ['dynptr_from_mem', 4],
  ['ringbuf_reserve_dynptr', 4],
  ['ringbuf_submit_dynptr', 2],
  ['ringbuf_discard_dynptr', 2],
  ['dynptr_read', 5],
  ['dynptr_write', 5],
  ['dynptr_data', 3],
  ['tcp_raw_gen_syncookie_ipv4', 3],
  ['tcp_raw_gen_syncookie_ipv6', 3],
  ['tcp_raw_check_syncookie_ipv4', 2],
  ['tcp_raw_check_syncookie_ipv6', 2],
  ['ktime_get_tai_ns', 0],
  ['user_ringbuf_drain', 4],
  ['cgrp_storage_get', 4],
  ['cgrp_storage_delete', 2],
] as const satisfies ReadonlyArray<readonly [string, number]>;

/** A helper's name without the `bpf_` prefix, as the kernel's ___BPF_FUNC_MAPPER spells it. */
export type HelperName = (typeof TABLE)[number][0];

const VARIADIC = new Set<string>(['trace_printk']);

/** Every helper, indexed by id (index 0, `unspec`, is undefined). */
export const HELPERS: ReadonlyArray<HelperInfo | undefined> = [
  undefined,
  ...TABLE.map(([name, args], i) => Object.freeze({ id: i + 1, name, args, variadic: VARIADIC.has(name) })),
];

const BY_NAME = new Map<string, HelperInfo>();
for (const h of HELPERS) if (h) BY_NAME.set(h.name, h);

/**
 * Helper ids by name (`HELPER_ID.map_lookup_elem` is 1): what code generation puts in a `BPF_CALL`'s `imm`. The
 * only table of helper ids; a misspelt name is a type error.
 */
export const HELPER_ID: Readonly<Record<HelperName, number>> = Object.freeze(
  Object.fromEntries(TABLE.map(([name], i) => [name, i + 1])) as Record<HelperName, number>,
);

/** Highest helper id known (211, `cgrp_storage_delete`). */
export const MAX_HELPER_ID = HELPERS.length - 1;

/**
 * Looks a helper up by name, with or without the `bpf_` prefix (`'map_lookup_elem'`, `'bpf_ktime_get_ns'`).
 * Returns undefined for an unknown name.
 */
export function helperByName(name: string): HelperInfo | undefined {
  return BY_NAME.get(name) ?? (name.startsWith('bpf_') ? BY_NAME.get(name.slice(4)) : undefined);
}

/** Looks a helper up by its id (the `imm` of a `BPF_CALL` instruction); undefined if the id is unknown. */
export function helperById(id: number): HelperInfo | undefined {
  return Number.isInteger(id) && id > 0 ? HELPERS[id] : undefined;
}

/** The helper's name as the kernel disassembler prints it (`bpf_map_lookup_elem`), or undefined if unknown. */
export function helperDisplayName(id: number): string | undefined {
  const h = helperById(id);
  return h ? `bpf_${h.name}` : undefined;
}
