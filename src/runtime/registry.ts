/**
 * How a running bpfscope makes itself known to `bpfscope ps` (and `listBpfObjects()`): while a run's programs are
 * loaded, the process keeps a small JSON file `/run/bpfscope/PID.json` naming its sessions: each session's program
 * text, its source name (`stdin` for `-e`, the script file, or the tool's name), the ids of its BPF programs, and the
 * process's command line and start time.
 *
 * Safety: the directory is created by root with mode 0700 and the file is written with mode 0600 through a
 * temporary file and rename(2), so no other user can read a program's text or plant a record. A process that is not
 * root (CAP_BPF only) does not register (it could not write /run), and nothing fails because of it. The reader
 * ({@link readSessionRecords}) accepts a record only when the directory and the file are owned by root and not
 * writable by group or others, the pid is alive, and its start time (field 22 of /proc/PID/stat, in clock ticks
 * since boot) matches the one recorded, so a record left behind by a killed run (SIGKILL skips the cleanup) never
 * names the wrong process.
 *
 * The file is removed when the last session of the process closes (`Tracer.close()`) and, as a fallback, at
 * process exit; records of processes that no longer exist are removed by the next run that registers.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';

/** The directory of session records. */
export const REGISTRY_DIR = '/run/bpfscope';

/** What one session of a bpfscope process records (format version 1). */
export interface SessionRecord {
  /** The program's source name: `stdin` (`-e`), the script's file name, or the tool's name (`opensnoop`). */
  source: string;
  /** The bpftrace program text (for tools: the program the tool generated). */
  program: string;
  /** Ids of the session's BPF programs. */
  progIds: number[];
  /** When the session loaded its programs (ms since the epoch). */
  startedMs: number;
}

/** The file's content: the process and its live sessions. */
export interface ProcessRecord {
  version: 1;
  pid: number;
  /** Start time of the process: field 22 of /proc/PID/stat (clock ticks since boot). */
  startTime: string;
  /** The process's command line (process.argv). */
  argv: string[];
  sessions: SessionRecord[];
}

/** Field 22 (starttime) of /proc/PID/stat, or undefined when the process is gone. */
export function processStartTime(pid: number | 'self'): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // the comm (field 2) may contain spaces and parentheses: fields after it start after the last ')'
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[22 - 3];
  } catch {
    return undefined;
  }
}

const live: SessionRecord[] = [];
let exitHook = false;

function fileName(pid: number): string {
  return `${REGISTRY_DIR}/${pid}.json`;
}

/** Creates the directory (root, 0700) or checks the existing one; false when it cannot be used safely. */
function ensureDir(): boolean {
  try {
    mkdirSync(REGISTRY_DIR, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return false;
  }
  return trustedDir();
}

function trustedDir(): boolean {
  try {
    const st = lstatSync(REGISTRY_DIR);
    return st.isDirectory() && st.uid === 0 && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

function writeRecord(): void {
  const path = fileName(process.pid);
  if (live.length === 0) {
    removeRecord();
    return;
  }
  const record: ProcessRecord = {
    version: 1,
    pid: process.pid,
    startTime: processStartTime('self') ?? '',
    argv: process.argv,
    sessions: live,
  };
  const tmp = `${path}.${process.hrtime.bigint()}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record)}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(tmp, path);
}

function removeRecord(): void {
  try {
    unlinkSync(fileName(process.pid));
  } catch {
    /* already gone */
  }
}

/** Removes the records of processes that no longer exist (a run killed with SIGKILL cannot remove its own). */
function pruneDead(): void {
  for (const n of readdirSync(REGISTRY_DIR)) {
    const m = /^(\d+)\.json$/.exec(n);
    if (!m || Number(m[1]) === process.pid || processStartTime(Number(m[1])) !== undefined) continue;
    try {
      unlinkSync(`${REGISTRY_DIR}/${n}`);
    } catch {
      /* removed meanwhile */
    }
  }
}

/**
 * Announce a session (called once its programs are loaded). Returns the function that withdraws it (idempotent).
 * Never throws: a process that cannot write the registry (not root, read-only /run) simply is not announced.
 */
export function registerSession(session: Omit<SessionRecord, 'startedMs'>): () => void {
  if (process.geteuid?.() !== 0) return () => {};
  const rec: SessionRecord = { ...session, startedMs: Date.now() };
  try {
    if (!ensureDir()) return () => {};
    if (live.length === 0) pruneDead();
    live.push(rec);
    writeRecord();
  } catch {
    const i = live.indexOf(rec);
    if (i >= 0) live.splice(i, 1);
    return () => {};
  }
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      if (live.length) removeRecord();
    });
  }
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const i = live.indexOf(rec);
    if (i >= 0) live.splice(i, 1);
    try {
      writeRecord();
    } catch {
      /* best effort: the reader checks the pid and start time */
    }
  };
}

/**
 * The records of running bpfscope processes that pass the checks above (others are ignored). Reading the directory
 * needs root; without it the answer is empty.
 */
export function readSessionRecords(): ProcessRecord[] {
  if (!trustedDir()) return [];
  let names: string[];
  try {
    names = readdirSync(REGISTRY_DIR);
  } catch {
    return [];
  }
  const out: ProcessRecord[] = [];
  for (const n of names) {
    const m = /^(\d+)\.json$/.exec(n);
    if (!m) continue;
    const path = `${REGISTRY_DIR}/${n}`;
    try {
      const st = lstatSync(path);
      if (!st.isFile() || st.uid !== 0 || (st.mode & 0o022) !== 0) continue;
      const rec = JSON.parse(readFileSync(path, 'utf8')) as ProcessRecord;
      if (rec.version !== 1 || rec.pid !== Number(m[1]) || !Array.isArray(rec.sessions)) continue;
      if (processStartTime(rec.pid) !== rec.startTime) continue;
      out.push(rec);
    } catch {
      /* removed meanwhile, or not ours */
    }
  }
  return out.sort((a, b) => a.pid - b.pid);
}
