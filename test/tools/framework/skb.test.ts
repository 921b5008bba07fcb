/**
 * framework/skb (src/tools/framework/skb.ts): drop reason names from a BTF enum and tracepoint record fields from
 * tracefs format files.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Btf } from '../../../src/kernel/btf.js';
import { dropReasonNames, tracepointFields } from '../../../src/tools/framework/skb.js';
import { tracepointExists } from '../../../src/tools/framework/system.js';

describe('framework/skb', () => {
  it('an unknown tracepoint has no fields', () => {
    assert.equal(tracepointFields('no_such_category', 'no_such_event').size, 0);
  });

  it(
    'tracepoint fields: plain, pointer and array fields, common ones included',
    {
      skip: tracepointExists('tcp', 'tcp_retransmit_skb') ? undefined : 'no tcp:tcp_retransmit_skb tracepoint',
    },
    () => {
      const f = tracepointFields('tcp', 'tcp_retransmit_skb');
      for (const name of ['common_pid', 'skbaddr', 'skaddr', 'sport', 'family', 'saddr', 'daddr_v6']) {
        assert.ok(f.has(name), `${name} in ${[...f].join(',')}`);
      }
      assert.ok(!f.has('__u8') && !f.has('4'));
    },
  );

  it('drop reasons: constants without SKB_DROP_REASON_, the first name of a value kept', () => {
    let btf: Btf;
    try {
      btf = Btf.vmlinux();
    } catch {
      return; // no kernel BTF here
    }
    const names = dropReasonNames(btf);
    if (names.size === 0) return; // kernel older than enum skb_drop_reason (5.17)
    assert.equal(names.get(0), 'SKB_NOT_DROPPED_YET');
    assert.equal(names.get(2), 'NOT_SPECIFIED');
    assert.ok(![...names.values()].some((n) => n.startsWith('SKB_DROP_REASON_')));
  });
});
