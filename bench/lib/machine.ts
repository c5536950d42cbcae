import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  os: string;
  commit: string;
}

export function describeMachine(): Machine {
  const list = cpus();
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    os: `${process.platform} ${process.arch}`,
    commit: gitCommit(),
  };
}

function gitCommit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'bench', ':!bench/RESULTS.md'], {
      encoding: 'utf8',
    });
    return dirty.trim() === '' ? sha : `${sha} (with uncommitted changes)`;
  } catch {
    return 'unknown';
  }
}

/** Resident set size and its peak, in MiB, from /proc (Linux); undefined elsewhere. */
export function rssOf(pid: number): { rssMiB: number; peakMiB: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) / 1024;
    return { rssMiB: field('VmRSS'), peakMiB: field('VmHWM') };
  } catch {
    return undefined;
  }
}
