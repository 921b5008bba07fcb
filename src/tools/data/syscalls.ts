/**
 * System call names by number: the tables moved to `src/kernel/syscalls.ts` (the runtime's `syscall_name()` uses
 * them, and the runtime must not import the tools layer); re-exported here for the tools.
 */
export { SYSCALLS_AARCH64, SYSCALLS_X86_64 } from '../../kernel/syscalls.js';
