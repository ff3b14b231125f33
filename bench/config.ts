/** How long and how often each scenario runs: the full run (about 6-8 minutes on 2 cores) or the quick smoke run. */
export interface BenchConfig {
  readonly quick: boolean;
  /** Scenario ids to run (all when empty). */
  readonly only: readonly string[];
  /** Repetitions of every timed measurement; the contender order alternates between them. */
  readonly reps: number;
  /**
   * Every contender is created once per worker count and warmed up once; then `rounds` rounds run each contender for
   * one `sliceMs` slice, in alternating order, so a drift of the machine's load hits every contender alike.
   */
  readonly uncontended: {
    readonly warmupMs: number;
    readonly sliceMs: number;
    readonly rounds: number;
    readonly workers: readonly number[];
  };
  readonly handoff: {
    readonly waiters: number;
    readonly holdMs: number;
    readonly warmupRounds: number;
    readonly minRounds: number;
    readonly maxRounds: number;
    readonly budgetMs: number;
  };
  readonly commands: { readonly uncontendedCycles: number; readonly contendedRounds: number };
  readonly readWrite: { readonly workers: number; readonly warmupMs: number; readonly durationMs: number };
  readonly watchdog: {
    readonly locks: number;
    readonly shortLeaseMs: number;
    readonly shortWindowMs: number;
    readonly measureDefaultLease: boolean;
    readonly defaultWindowMs: number;
  };
  readonly http: {
    readonly connections: number;
    readonly warmupS: number;
    readonly durationS: number;
    readonly articles: number;
  };
  /** The library on several topologies; handoff rounds use `handoff.waiters` and `handoff.holdMs`. */
  readonly topologies: {
    readonly warmupMs: number;
    readonly durationMs: number;
    readonly workers: readonly number[];
    readonly commandCycles: number;
    readonly handoffWarmupRounds: number;
    readonly handoffMinRounds: number;
    readonly handoffMaxRounds: number;
    readonly handoffBudgetMs: number;
  };
  /** Opt-in (`--only=scale`, several minutes): many locks held by one process. */
  readonly scale: {
    readonly shortLocks: number;
    readonly shortLeaseMs: number;
    readonly shortHoldMs: number;
    readonly defaultCounts: readonly number[];
    readonly defaultHoldMs: number;
  };
}

export const SCENARIOS = [
  'uncontended',
  'handoff',
  'commands',
  'read-write',
  'watchdog',
  'http',
  'topologies',
  'scale',
] as const;
/** Scenarios that run only when named in `--only` (they take minutes). */
const OPT_IN: readonly ScenarioId[] = ['scale'];
export type ScenarioId = (typeof SCENARIOS)[number];

/** Reads `--quick` (or `BENCH_QUICK=1`) and `--only=a,b` (or `BENCH_ONLY=a,b`). */
export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): BenchConfig {
  const quick = argv.includes('--quick') || env.BENCH_QUICK === '1';
  const onlyArg = argv.find((a) => a.startsWith('--only='))?.slice('--only='.length) ?? env.BENCH_ONLY ?? '';
  const only = onlyArg
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const id of only) {
    if (!(SCENARIOS as readonly string[]).includes(id))
      throw new Error(`unknown scenario "${id}"; expected one of ${SCENARIOS.join(', ')}`);
  }
  if (quick) {
    return {
      quick,
      only,
      reps: 1,
      uncontended: { warmupMs: 200, sliceMs: 250, rounds: 2, workers: [1, 50] },
      handoff: { waiters: 20, holdMs: 1, warmupRounds: 1, minRounds: 2, maxRounds: 5, budgetMs: 400 },
      commands: { uncontendedCycles: 200, contendedRounds: 2 },
      readWrite: { workers: 50, warmupMs: 200, durationMs: 500 },
      watchdog: {
        locks: 10_000,
        shortLeaseMs: 3_000,
        shortWindowMs: 2_100,
        measureDefaultLease: false,
        defaultWindowMs: 0,
      },
      http: { connections: 50, warmupS: 1, durationS: 2, articles: 10_000 },
      topologies: {
        warmupMs: 200,
        durationMs: 500,
        workers: [1, 10],
        commandCycles: 200,
        handoffWarmupRounds: 1,
        handoffMinRounds: 2,
        handoffMaxRounds: 5,
        handoffBudgetMs: 300,
      },
      scale: {
        shortLocks: 20_000,
        shortLeaseMs: 3_000,
        shortHoldMs: 5_000,
        defaultCounts: [20_000],
        defaultHoldMs: 2_000,
      },
    };
  }
  return {
    quick,
    only,
    reps: 3,
    uncontended: { warmupMs: 1_000, sliceMs: 750, rounds: 12, workers: [1, 50] },
    handoff: { waiters: 20, holdMs: 1, warmupRounds: 3, minRounds: 5, maxRounds: 60, budgetMs: 3_000 },
    commands: { uncontendedCycles: 1_000, contendedRounds: 10 },
    readWrite: { workers: 50, warmupMs: 1_000, durationMs: 3_000 },
    watchdog: {
      locks: 10_000,
      shortLeaseMs: 3_000,
      shortWindowMs: 6_100,
      measureDefaultLease: true,
      defaultWindowMs: 20_500,
    },
    http: { connections: 50, warmupS: 1, durationS: 5, articles: 10_000 },
    // Every topology runs every repetition (3 now, 4 with quorum): about 6 s each per repetition, under 90 s in all.
    topologies: {
      warmupMs: 500,
      durationMs: 2_000,
      workers: [1, 10],
      commandCycles: 1_000,
      handoffWarmupRounds: 2,
      handoffMinRounds: 5,
      handoffMaxRounds: 40,
      handoffBudgetMs: 1_200,
    },
    // The default lease is 30 s: each count is held for longer than one lease, so every hold is renewed. (400,000
    // exhausted the bench process's default 4.3 GB V8 heap in a run before the single-holder form; 300,000 used
    // 846 MB of RSS at 68f58df.)
    scale: {
      shortLocks: 100_000,
      shortLeaseMs: 3_000,
      shortHoldMs: 60_000,
      defaultCounts: [100_000, 200_000, 300_000],
      defaultHoldMs: 40_000,
    },
  };
}

/** Whether `id` is selected by `--only` (every scenario when none is given). */
export function selected(config: BenchConfig, id: ScenarioId): boolean {
  if (OPT_IN.includes(id)) return config.only.includes(id);
  return config.only.length === 0 || config.only.includes(id);
}
