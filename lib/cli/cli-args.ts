import { parseArgs } from 'node:util';

/** A mistake in how the tool was called: exit code 2, with the usage. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The commands of `nest-redis-locks`. */
export type CliCommand = 'list' | 'inspect' | 'watch' | 'release' | 'leaders';

/** What the command line asked for, defaults merged. */
export interface CliOptions {
  readonly command: CliCommand | 'help' | 'version';
  /** `list`/`watch`: the key prefix to filter on; `leaders`: the name prefix; `inspect`/`release`: the key. */
  readonly target: string;
  readonly urls: readonly string[];
  readonly topology: 'standalone' | 'cluster' | 'quorum';
  readonly keyPrefix: string;
  readonly json: boolean;
  readonly timeoutMs: number;
  readonly maxKeys: number;
  readonly intervalMs: number;
  readonly holdWarningMs: number;
  readonly waitWarningMs: number;
  readonly tlsCa: string | undefined;
  readonly force: boolean;
  readonly yes: boolean;
}

/** The defaults; the one place they live. */
export const CLI_DEFAULTS = Object.freeze({
  url: 'redis://127.0.0.1:6379',
  keyPrefix: 'lock:',
  timeoutMs: 2_000,
  maxKeys: 500,
  intervalMs: 1_000,
  holdWarningMs: 60_000,
  waitWarningMs: 5_000,
});

export const USAGE = `Usage: nest-redis-locks <command> [arguments] [options]

Commands:
  list [prefix]             Held locks whose key starts with prefix (all when omitted)
  inspect <key>             One lock: holders, lease left, fencing token, waiters
  watch [prefix]            list, refreshed every --interval until Ctrl-C
  release <key> --force     Free a lock whoever holds it (asks first on a terminal unless --yes)
  leaders [prefix]          Leaders (@Leader, campaign) whose name starts with prefix: holder, term, since

Options:
  --url <url>               redis:// or rediss:// URL; repeat for several nodes (default: $REDIS_URL, else ${CLI_DEFAULTS.url})
  --cluster                 the URLs are nodes of a Redis Cluster (found by itself for one URL)
  --quorum                  the URLs are the independent masters of quorum mode
  --prefix <prefix>         the application's keyPrefix (default ${CLI_DEFAULTS.keyPrefix})
  --json                    machine-readable output (watch: one JSON document per line)
  --timeout <ms>            bound of each Redis call (default ${CLI_DEFAULTS.timeoutMs})
  --max-keys <n>            most locks read per listing (default ${CLI_DEFAULTS.maxKeys})
  --interval <ms>           watch: refresh period (default ${CLI_DEFAULTS.intervalMs})
  --hold-warning-ms <ms>    flag holds older than this (default ${CLI_DEFAULTS.holdWarningMs}; 0: off)
  --wait-warning-ms <ms>    flag waiters older than this (default ${CLI_DEFAULTS.waitWarningMs}; 0: off)
  --tls-ca <file>           CA certificate (PEM) for rediss:// URLs
  --force                   release: required, to say it is meant
  --yes                     release: do not ask
  -h, --help                this text
  -v, --version             the version

Exit codes: 0 done, 1 error (Redis unreachable, refused, ...), 2 usage.
`;

/** Parses `argv` (without node and the script); throws `UsageError`. */
export function parseCli(argv: readonly string[], env: NodeJS.ProcessEnv): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        url: { type: 'string', multiple: true },
        cluster: { type: 'boolean', default: false },
        quorum: { type: 'boolean', default: false },
        prefix: { type: 'string' },
        json: { type: 'boolean', default: false },
        timeout: { type: 'string' },
        'max-keys': { type: 'string' },
        interval: { type: 'string' },
        'hold-warning-ms': { type: 'string' },
        'wait-warning-ms': { type: 'string' },
        'tls-ca': { type: 'string' },
        force: { type: 'boolean', default: false },
        yes: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        version: { type: 'boolean', short: 'v', default: false },
      },
    });
  } catch (err) {
    throw new UsageError(parseArgsMessage(err as Error & { code?: string }));
  }
  const { values: v, positionals } = parsed;
  const base = { target: '', force: v.force, yes: v.yes, json: v.json };
  if (v.help) return { ...defaults(env), ...base, command: 'help' };
  if (v.version) return { ...defaults(env), ...base, command: 'version' };
  const [command, target, ...extra] = positionals;
  if (command === undefined) throw new UsageError('no command given');
  if (!['list', 'inspect', 'watch', 'release', 'leaders'].includes(command))
    throw new UsageError(`unknown command "${command}"`);
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  if ((command === 'inspect' || command === 'release') && !target) throw new UsageError(`${command} needs a key`);
  if (command === 'release' && !v.force)
    throw new UsageError('release frees the lock whoever holds it: add --force to say you mean it');
  if (v.cluster && v.quorum) throw new UsageError('--cluster and --quorum exclude each other');
  const urls = v.url ?? [env.REDIS_URL || CLI_DEFAULTS.url];
  for (const url of urls)
    if (!/^rediss?:\/\/[^/]/.test(url))
      throw new UsageError(`--url ${JSON.stringify(url)} is not a redis:// or rediss:// URL`);
  if (urls.length > 1 && !v.cluster && !v.quorum)
    throw new UsageError('several --url: add --cluster (nodes of one Redis Cluster) or --quorum (independent masters)');
  if (v.quorum && (urls.length < 3 || urls.length % 2 === 0))
    throw new UsageError('--quorum needs an odd number of 3 or more --url');
  return {
    ...base,
    command: command as CliCommand,
    target: target ?? '',
    urls,
    topology: v.cluster ? 'cluster' : v.quorum ? 'quorum' : 'standalone',
    keyPrefix: v.prefix ?? CLI_DEFAULTS.keyPrefix,
    timeoutMs: count('--timeout', v.timeout, CLI_DEFAULTS.timeoutMs, 10),
    maxKeys: count('--max-keys', v['max-keys'], CLI_DEFAULTS.maxKeys, 1),
    intervalMs: count('--interval', v.interval, CLI_DEFAULTS.intervalMs, 100),
    holdWarningMs: count('--hold-warning-ms', v['hold-warning-ms'], CLI_DEFAULTS.holdWarningMs, 0),
    waitWarningMs: count('--wait-warning-ms', v['wait-warning-ms'], CLI_DEFAULTS.waitWarningMs, 0),
    tlsCa: v['tls-ca'],
  };
}

/**
 * What `parseArgs` refused, in one line. Its own text for an unknown option goes on about positionals starting with
 * `-` and ends in an unclosed quote; name the option instead.
 */
function parseArgsMessage(err: Error & { code?: string }): string {
  // The option runs to the quote before the hint (or the end): it may hold a quote itself (`--it's`).
  const unknown =
    err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
      ? /^Unknown option '(.*?)'(?:\. To specify|$)/m.exec(err.message)
      : null;
  if (unknown) return `unknown option ${JSON.stringify(unknown[1])}`;
  return err.message.split('\n')[0];
}

function defaults(env: NodeJS.ProcessEnv): Omit<CliOptions, 'command' | 'target' | 'force' | 'yes' | 'json'> {
  return {
    urls: [env.REDIS_URL || CLI_DEFAULTS.url],
    topology: 'standalone',
    keyPrefix: CLI_DEFAULTS.keyPrefix,
    timeoutMs: CLI_DEFAULTS.timeoutMs,
    maxKeys: CLI_DEFAULTS.maxKeys,
    intervalMs: CLI_DEFAULTS.intervalMs,
    holdWarningMs: CLI_DEFAULTS.holdWarningMs,
    waitWarningMs: CLI_DEFAULTS.waitWarningMs,
    tlsCa: undefined,
  };
}

function count(option: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min)
    throw new UsageError(`${option} ${JSON.stringify(raw)}: expected a whole number from ${min}`);
  return n;
}
