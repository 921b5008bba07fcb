import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HELPERS, helperById, helperByName, helperDisplayName, MAX_HELPER_ID } from '../../src/bpf/helpers.js';

describe('helpers table', () => {
  it('has the ids listed in KERNEL.md (include/uapi/linux/bpf.h order)', () => {
    const expected: Record<string, number> = {
      map_lookup_elem: 1,
      map_update_elem: 2,
      map_delete_elem: 3,
      ktime_get_ns: 5,
      trace_printk: 6,
      get_prandom_u32: 7,
      get_smp_processor_id: 8,
      get_current_pid_tgid: 14,
      get_current_uid_gid: 15,
      get_current_comm: 16,
      perf_event_output: 25,
      get_stackid: 27,
      get_current_task: 35,
      get_stack: 67,
      get_current_cgroup_id: 80,
      send_signal: 109,
      probe_read_user: 112,
      probe_read_kernel: 113,
      probe_read_user_str: 114,
      probe_read_kernel_str: 115,
      ringbuf_output: 130,
      ringbuf_reserve: 131,
      ringbuf_submit: 132,
      ringbuf_discard: 133,
      get_current_task_btf: 158,
      snprintf: 165,
      get_func_ip: 173,
      get_attach_cookie: 174,
      loop: 181,
      get_func_arg: 183,
      get_func_ret: 184,
      ktime_get_boot_ns: 125,
      user_ringbuf_drain: 209,
      cgrp_storage_delete: 211,
    };
    for (const [name, id] of Object.entries(expected)) assert.equal(helperByName(name)?.id, id, name);
    assert.equal(MAX_HELPER_ID, 211);
    assert.equal(HELPERS[0], undefined);
  });
  it('has argument counts from the helper prototypes', () => {
    const expected: Record<string, number> = {
      map_lookup_elem: 2,
      map_update_elem: 4,
      ktime_get_ns: 0,
      get_current_comm: 2,
      perf_event_output: 5,
      get_stackid: 3,
      get_stack: 4,
      probe_read_user_str: 3,
      ringbuf_output: 4,
      ringbuf_reserve: 3,
      ringbuf_submit: 2,
      snprintf: 5,
      loop: 4,
      get_func_arg: 3,
      cgrp_storage_get: 4,
    };
    for (const [name, args] of Object.entries(expected)) assert.equal(helperByName(name)?.args, args, name);
    assert.equal(helperByName('trace_printk')?.variadic, true);
    assert.equal(helperByName('snprintf')?.variadic, false);
  });
  it('looks up by id and by name with or without the bpf_ prefix', () => {
    assert.equal(helperById(130)?.name, 'ringbuf_output');
    assert.equal(helperByName('bpf_get_current_pid_tgid')?.id, 14);
    assert.equal(helperDisplayName(1), 'bpf_map_lookup_elem');
    assert.equal(helperById(0), undefined);
    assert.equal(helperById(212), undefined);
    assert.equal(helperById(1.5), undefined);
    assert.equal(helperByName('nope'), undefined);
  });
  it('has unique names and consecutive ids', () => {
    const names = new Set<string>();
    for (let id = 1; id <= MAX_HELPER_ID; id++) {
      const h = HELPERS[id]!;
      assert.equal(h.id, id);
      assert.ok(!names.has(h.name), h.name);
      names.add(h.name);
      assert.ok(h.args >= 0 && h.args <= 5, h.name);
    }
  });
});
