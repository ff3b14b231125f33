import type { BenchConfig } from './config.js';
import type { CommandsResult } from './scenarios/commands.scenario.js';
import type { HandoffResult } from './scenarios/handoff.scenario.js';
import type { HttpResult } from './scenarios/http.scenario.js';
import type { ReadWriteResult } from './scenarios/read-write.scenario.js';
import type { UncontendedResult } from './scenarios/uncontended.scenario.js';
import type { WatchdogResult } from './scenarios/watchdog.scenario.js';
import type { ScaleResult } from './scenarios/scale.scenario.js';
import type { TopologiesResult } from './scenarios/topologies.scenario.js';
import type { MachineInfo } from './support/machine.js';

/** Everything one run measured: what `latest.json` holds. */
export interface BenchResults {
  readonly date: string;
  readonly mode: 'full' | 'quick' | 'partial';
  readonly machine: MachineInfo;
  /** Git commit of the library measured. */
  readonly library: string;
  readonly config: BenchConfig;
  readonly contenders: readonly {
    readonly id: string;
    readonly label: string;
    readonly kind: string;
    readonly settings: string;
  }[];
  durationS?: number;
  uncontended?: UncontendedResult;
  handoff?: HandoffResult;
  commands?: CommandsResult;
  readWrite?: ReadWriteResult;
  watchdog?: WatchdogResult;
  scale?: ScaleResult;
  http?: HttpResult;
  topologies?: TopologiesResult;
  targets?: readonly TargetResult[];
}

export interface TargetResult {
  readonly scenario: string;
  readonly target: string;
  readonly measured: string;
  readonly pass: boolean;
  /** How far the target is met: 1 is exactly at the target, above 1 better, below 1 a miss. */
  readonly attainment: number;
}
