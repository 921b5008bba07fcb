/**
 * Facts about socket buffers that tools read in user space: the names of the kernel's packet drop reasons
 * (`enum skb_drop_reason`, `include/net/dropreason-core.h`) read from the running kernel's BTF, and the fields a
 * tracepoint's record has (from its tracefs `format` file), for tools that adapt to kernel versions.
 */
import { Btf, BtfKind } from '../../kernel/btf.js';
import { systemTracefs } from '../../kernel/tracefs.js';

/** The prefix of every drop reason constant but the first two (`SKB_NOT_DROPPED_YET`, `SKB_CONSUMED`). */
const DROP_REASON_PREFIX = 'SKB_DROP_REASON_';

/**
 * Drop reason number → name as bcc's tcpdrop prints it (`NETFILTER_DROP`, `TCP_OLD_DATA`, `SKB_CONSUMED`): the
 * constants of the kernel's `enum skb_drop_reason` without their `SKB_DROP_REASON_` prefix. The numbers change
 * between kernel versions (new reasons are inserted in the middle), so they come from this kernel's BTF rather
 * than a fixed table. Empty when the kernel has no such enum or no BTF.
 */
export function dropReasonNames(btf?: Btf): Map<number, string> {
  const out = new Map<number, string>();
  let b: Btf;
  try {
    b = btf ?? Btf.vmlinux();
  } catch {
    return out;
  }
  const id = b.findType('skb_drop_reason', BtfKind.ENUM);
  if (id === undefined) return out;
  for (const v of b.enumValues(id)) {
    const name = v.name.startsWith(DROP_REASON_PREFIX) ? v.name.slice(DROP_REASON_PREFIX.length) : v.name;
    if (!out.has(Number(v.value))) out.set(Number(v.value), name);
  }
  return out;
}

/** Field names of tracepoint `category:event`'s record (common fields included); empty when it does not exist. */
export function tracepointFields(category: string, event: string): Set<string> {
  const out = new Set<string>();
  let text: string;
  try {
    text = systemTracefs().eventFormat(category, event);
  } catch {
    return out;
  }
  // `field:unsigned short protocol;	offset:32;...` / `field:__u8 saddr[4];` / `field:__data_loc char[] name;`
  for (const m of text.matchAll(/^\s*field:[^;]*?([A-Za-z_]\w*)(?:\[\d*\])?;/gm)) out.add(m[1]!);
  return out;
}
