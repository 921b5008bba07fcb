/**
 * Test programs for symbolization, compiled on the fly with the system C/C++ compiler: a PIE executable with known
 * functions that prints their run-time addresses, a shared library linked to it (C++ for a mangled name when `c++`
 * exists), a second library dlopen()ed on request with a non-zero link base (-Ttext-segment) while its preferred
 * address is taken (so its load bias and p_vaddr are both non-zero), and a stripped copy of the executable with a
 * `.gnu_debuglink` to a separate debug file.
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function has(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why the compiled-program tests cannot run here, or undefined. */
export const noCompiler = has('cc') && has('objcopy') ? undefined : 'needs cc and objcopy (binutils)';
/** Whether the shared library is C++ (else C, without the mangled method). */
export const haveCxx = has('c++');

const LIB_CXX = `
namespace bpfscope {
struct Widget {
  static int compute(int x);
};
__attribute__((noinline)) int Widget::compute(int x) { return x * 7 + 3; }
}  // namespace bpfscope
extern "C" __attribute__((noinline)) int lib_func(int x) { return x + 42; }
extern "C" void *lib_func_addr(void) { return (void *)&lib_func; }
extern "C" void *cxx_method_addr(void) { return (void *)&bpfscope::Widget::compute; }
`;

const LIB_C = `
__attribute__((noinline)) int lib_func(int x) { return x + 42; }
void *lib_func_addr(void) { return (void *)&lib_func; }
void *cxx_method_addr(void) { return (void *)0; }
`;

const LIB_BIAS = `
__attribute__((noinline)) int bias_func(int x) { return x * 11 + 5; }
__attribute__((noinline)) int bias_other(int x) { return bias_func(x) - 1; }
`;

const PROG = `
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
void *lib_func_addr(void);
void *cxx_method_addr(void);
__attribute__((noinline)) int alpha_func(int x) {
  volatile int a = x;
  for (int i = 0; i < 8; i++) a = a * 3 + i;
  return a;
}
__attribute__((noinline)) static int beta_static(int x) { return x ^ 0x55; }
int main(int argc, char **argv) {
  printf("alpha_func %p\\n", (void *)alpha_func);
  printf("alpha_func_plus5 %p\\n", (void *)((char *)alpha_func + 5));
  printf("beta_static %p\\n", (void *)beta_static);
  printf("lib_func %p\\n", lib_func_addr());
  printf("cxx_method %p\\n", cxx_method_addr());
  printf("ready\\n");
  fflush(stdout);
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    if (strncmp(line, "dlopen ", 7) == 0) {
      line[strcspn(line, "\\n")] = 0;
      /* Take the library's preferred address so that the loader must place it elsewhere. */
      mmap((void *)0x20000000, 0x10000, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      void *h = dlopen(line + 7, RTLD_NOW);
      printf("bias_func %p\\n", h ? dlsym(h, "bias_func") : NULL);
      printf("bias_other %p\\n", h ? dlsym(h, "bias_other") : NULL);
      printf("loaded\\n");
      fflush(stdout);
    }
  }
  return alpha_func(beta_static(argc)) == 0 && argv != 0;
}
`;

/** Paths of the built programs. */
export interface Built {
  dir: string;
  /** PIE executable with .symtab. */
  prog: string;
  /** Stripped copy of `prog` with a .gnu_debuglink to `debugFile` (in the same directory). */
  stripped: string;
  debugFile: string;
  /** Non-PIE (ET_EXEC) build of the same program, never run. */
  nopie: string;
  lib: string;
  biasLib: string;
  cleanup(): void;
}

function sh(cmd: string, args: string[], cwd: string): void {
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Compile everything into a fresh temporary directory. */
export function build(): Built {
  const dir = mkdtempSync(join(tmpdir(), 'bpfscope-sym-'));
  const libSrc = haveCxx ? 'lib.cpp' : 'lib.c';
  writeFileSync(join(dir, libSrc), haveCxx ? LIB_CXX : LIB_C);
  writeFileSync(join(dir, 'bias.c'), LIB_BIAS);
  writeFileSync(join(dir, 'prog.c'), PROG);
  sh(haveCxx ? 'c++' : 'cc', ['-shared', '-fPIC', '-O1', '-g', '-o', 'libdemo.so', libSrc], dir);
  sh('cc', ['-shared', '-fPIC', '-O1', '-g', '-Wl,-Ttext-segment=0x20000000', '-o', 'libbias.so', 'bias.c'], dir);
  const link = ['-L.', '-ldemo', `-Wl,-rpath,${dir}`, '-ldl'];
  sh('cc', ['-O1', '-g', '-fPIE', '-pie', '-Wl,--build-id', '-o', 'prog', 'prog.c', ...link], dir);
  sh('cc', ['-O1', '-g', '-fno-pie', '-no-pie', '-o', 'prog-nopie', 'prog.c', ...link], dir);
  sh('objcopy', ['--only-keep-debug', 'prog', 'prog.debug'], dir);
  sh('objcopy', ['--strip-all', '--add-gnu-debuglink=prog.debug', 'prog', 'prog-stripped'], dir);
  return {
    dir,
    prog: join(dir, 'prog'),
    stripped: join(dir, 'prog-stripped'),
    debugFile: join(dir, 'prog.debug'),
    nopie: join(dir, 'prog-nopie'),
    lib: join(dir, 'libdemo.so'),
    biasLib: join(dir, 'libbias.so'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A running test program and the addresses it printed. */
export interface Running {
  child: ChildProcessWithoutNullStreams;
  pid: number;
  addrs: Map<string, bigint>;
  /** Send a command line and wait until the program prints `until`; returns the new addresses. */
  command(line: string, until: string): Promise<Map<string, bigint>>;
  stop(): Promise<void>;
}

/** Start `path` and wait for its `ready` line. */
export function run(path: string): Promise<Running> {
  const child = spawn(path, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  let buf = '';
  const addrs = new Map<string, bigint>();
  let waiter: { until: string; resolve: () => void } | undefined;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    buf += d;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const m = /^(\w+) (0x[0-9a-f]+|\(nil\))$/.exec(line);
      if (m) addrs.set(m[1]!, m[2] === '(nil)' ? 0n : BigInt(m[2]!));
      if (waiter && line === waiter.until) {
        const w = waiter;
        waiter = undefined;
        w.resolve();
      }
      nl = buf.indexOf('\n');
    }
  });
  const wait = (until: string) =>
    new Promise<void>((resolve, reject) => {
      waiter = { until, resolve };
      child.once('exit', (code) => reject(new Error(`${path} exited (${code}) before printing ${until}`)));
      child.once('error', reject);
    });
  const running: Running = {
    child,
    pid: child.pid!,
    addrs,
    async command(line, until) {
      const before = new Set(addrs.keys());
      const p = wait(until);
      child.stdin.write(`${line}\n`);
      await p;
      return new Map([...addrs].filter(([k]) => !before.has(k)));
    },
    stop() {
      return new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
      });
    },
  };
  return wait('ready').then(() => running);
}
