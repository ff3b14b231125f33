import { execFileSync } from 'node:child_process';
import { cpus, loadavg, release, totalmem, type } from 'node:os';

export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  readonly redis: string;
  /** 1-minute load average when the run started: other work on the machine skews every number. */
  readonly loadAtStart: number;
  loadAtEnd?: number;
}

export function machineInfo(redisVersion: string): MachineInfo {
  const list = cpus();
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    node: process.version,
    redis: redisVersion,
    loadAtStart: Math.round(loadavg()[0] * 100) / 100,
  };
}

export function currentLoad(): number {
  return Math.round(loadavg()[0] * 100) / 100;
}

export function describeMachine(m: MachineInfo): string {
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}; Node ${m.node}; Redis ${m.redis} on loopback`;
}

/** The commit the library was built from, with "+ uncommitted changes in lib/" when lib/ differs from it. */
export function libraryRevision(root: string): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const head = git('rev-parse', '--short', 'HEAD');
    const dirty = git('status', '--porcelain', '--', 'lib') !== '';
    return dirty ? `${head} + uncommitted changes in lib/` : head;
  } catch {
    return 'unknown (not a git checkout)';
  }
}
