/**
 * Kernel layout checks for tools that adapt to the running kernel: struct members from the kernel's BTF
 * (`/sys/kernel/btf/vmlinux`, bcc's `BPF.kernel_struct_has_field`) and tracepoint fields from tracefs format
 * files.
 */
import { Btf, BtfKind } from '../../kernel/btf.js';
import { systemTracefs } from '../../kernel/tracefs.js';

/**
 * Whether `struct <struct>` has member `field` (members of anonymous structs/unions count, as C lets you name
 * them). False when the kernel has no BTF or no such struct.
 */
export function kernelStructHasField(struct: string, field: string): boolean {
  try {
    const btf = Btf.vmlinux();
    const id = btf.findType(struct, BtfKind.STRUCT);
    return id !== undefined && btf.member(id, field) !== undefined;
  } catch {
    return false;
  }
}

/** The first of `fields` that `struct <struct>` has (for renamed members), or undefined. */
export function firstStructField(struct: string, fields: string[]): string | undefined {
  return fields.find((f) => kernelStructHasField(struct, f));
}

/** Whether tracepoint `category:event` exists and its format file has a field named `field`. */
export function tracepointHasField(category: string, event: string, field: string): boolean {
  try {
    const format = systemTracefs().eventFormat(category, event);
    return new RegExp(`^\\s*field:[^;]*[\\s*]${field}(\\[\\d*\\])?;`, 'm').test(format);
  } catch {
    return false;
  }
}
