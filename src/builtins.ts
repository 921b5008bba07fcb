/**
 * Node built-in modules that most runs never use, loaded on first use instead of at start-up. Loading
 * `node:child_process` (which loads `node:net` too) costs ~4-7 ms and `node:zlib` ~2 ms on this machine, while
 * they are only needed for system(), `-c`, mounting tracefs, `ldconfig -p`, pton() of a literal and debuglink
 * CRCs. The accessors are synchronous, so their callers stay synchronous; each returns Node's module object
 * (cached by Node after the first call).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** `node:child_process`, loaded on the first call. */
export function childProcess(): typeof import('node:child_process') {
  return require('node:child_process') as typeof import('node:child_process');
}

/** `node:net`, loaded on the first call. */
export function net(): typeof import('node:net') {
  return require('node:net') as typeof import('node:net');
}

/** `node:zlib`, loaded on the first call. */
export function zlib(): typeof import('node:zlib') {
  return require('node:zlib') as typeof import('node:zlib');
}
