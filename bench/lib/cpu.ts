import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ): 100 on Linux. */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) a process and its children still running have used; 0 off Linux. */
export function cpuSeconds(pid: number): number {
  let total = 0;
  for (const id of [pid, ...childrenOf(pid)]) {
    try {
      // Fields after the command name (which may hold spaces) start at field 3: utime is 14, stime 15.
      const stat = readFileSync(`/proc/${id}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
    } catch {
      // The process ended or this is not Linux.
    }
  }
  return total;
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter((text) => text !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/** Runs `work` and reports how many cores' worth of CPU `pid` used meanwhile (1.0 = one core busy). */
export async function withCpu<T>(pid: number, work: () => Promise<T>): Promise<{ value: T; cores: number }> {
  const before = cpuSeconds(pid);
  const start = performance.now();
  const value = await work();
  const seconds = (performance.now() - start) / 1000;
  return { value, cores: (cpuSeconds(pid) - before) / seconds };
}
