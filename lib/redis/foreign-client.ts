/**
 * What a `redis` value that is neither a URL, ioredis options nor an ioredis client is, for the refusal's message; or
 * `undefined` for options (an object with no client methods). A client (a node-redis, iovalkey or Valkey GLIDE
 * client, or an ioredis client of another copy of ioredis than the library's) must never be taken for options: the
 * library would connect to 127.0.0.1:6379 instead of the application's server.
 */
export function describeForeignClient(input: object): string | undefined {
  const proto: unknown = Object.getPrototypeOf(input);
  const plain = proto === Object.prototype || proto === null;
  const methods = input as Record<string, unknown>;
  const looksLikeClient = ['sendCommand', 'customCommand', 'connect', 'quit', 'duplicate'].some(
    (m) => typeof methods[m] === 'function',
  );
  // Options may come as an instance of an application's own config class: data only, no client methods.
  if (
    !looksLikeClient &&
    (plain ||
      !/^(Glide\w*|Redis|Cluster|RedisClient|RedisCluster|RedisSentinel|Commander)$/.test(constructorName(input)))
  )
    return undefined;
  const name = plain ? 'an object with client methods' : `a ${constructorName(input)}`;
  if (typeof methods.customCommand === 'function' || /^Glide/.test(constructorName(input))) {
    return `${name} (Valkey GLIDE)`;
  }
  if (typeof methods.sendCommand === 'function' && 'isOpen' in input) return `${name} (node-redis)`;
  if (typeof methods.duplicate === 'function' && 'status' in input) {
    return `${name} (iovalkey, or another copy of ioredis than the one nest-redis-locks loads)`;
  }
  return name;
}

function constructorName(input: object): string {
  const ctor = (input as { constructor?: { name?: unknown } }).constructor;
  return typeof ctor?.name === 'string' && ctor.name !== '' ? ctor.name : 'object';
}

/** The ioredis options whose value may be a function (a strategy, a connector class, a lookup). */
const FUNCTION_OPTIONS = new Set([
  ...['retryStrategy', 'reconnectOnError', 'sentinelRetryStrategy', 'sentinelReconnectStrategy', 'natMap'],
  ...['preferredSlaves', 'Connector', 'lookup', 'checkServerIdentity', 'failoverDetector'],
]);

/**
 * The keys of ioredis' `RedisOptions` (connection, Sentinel and socket settings of ioredis 5 and 6): an object passed
 * as `redis` is taken for options only when at least one of its keys is one of these, or it has no key at all
 * (ioredis' defaults).
 */
const IOREDIS_OPTIONS = new Set([
  ...FUNCTION_OPTIONS,
  ...['host', 'port', 'path', 'family', 'tls', 'username', 'password', 'db', 'name', 'role', 'keyPrefix', 'protocol'],
  ...['connectTimeout', 'commandTimeout', 'socketTimeout', 'disconnectTimeout', 'blockingTimeout'],
  ...['blockingTimeoutGrace', 'keepAlive', 'noDelay', 'connectionName', 'disableClientInfo', 'clientInfoTag'],
  ...['autoResubscribe', 'autoResendUnfulfilledCommands', 'readOnly', 'stringNumbers', 'monitor'],
  ...['maxRetriesPerRequest', 'maxLoadingRetryTime', 'enableAutoPipelining', 'autoPipeliningIgnoredCommands'],
  ...['offlineQueue', 'commandQueue', 'enableOfflineQueue', 'enableReadyCheck', 'lazyConnect', 'scripts'],
  ...['showFriendlyErrorStack', 'replyMapping', 'sentinels', 'sentinelUsername', 'sentinelPassword', 'sentinelTLS'],
  ...['sentinelCommandTimeout', 'sentinelMaxConnections', 'enableTLSForSentinelMode', 'updateSentinels'],
  ...['localAddress', 'localPort', 'timeout', 'hints', 'keepAliveInitialDelay', 'autoSelectFamily'],
  'autoSelectFamilyAttemptTimeout',
]);

/**
 * What a `redis` value that is neither a string, a client nor ioredis options is, for the refusal's message (after
 * "received "); `undefined` for what may be ioredis options. The rule (docs/clients.md, "What `redis` accepts"): an
 * object is options when it is a plain object or an instance of the application's own class (not a built-in such as
 * `Map`), its only methods are ioredis' function options (`retryStrategy`, `reconnectOnError`, …), and it has no key
 * at all or at least one ioredis option key. A Promise (a client not awaited), a number, a function are never options.
 */
export function describeNonOptions(input: unknown): string | undefined {
  if (typeof input === 'number' || typeof input === 'boolean' || typeof input === 'bigint') {
    return `a ${typeof input} (${String(input)})`;
  }
  if (typeof input === 'function') {
    const name = (input as { name?: unknown }).name;
    return typeof name === 'string' && name !== '' ? `a function (${name})` : 'a function';
  }
  if (typeof input !== 'object' || input === null) return `${typeof input === 'symbol' ? 'a symbol' : String(input)}`;
  if (typeof (input as { then?: unknown }).then === 'function') {
    return 'a Promise: did you forget `await`? Pass the client once created (`redis: await …`)';
  }
  const proto: unknown = Object.getPrototypeOf(input);
  const plain = proto === Object.prototype || proto === null;
  if (!plain && isBuiltIn(input)) {
    return input instanceof URL ? 'a URL (pass its text: `url.href`)' : `a ${constructorName(input)}`;
  }
  const what = plain ? 'an object' : `a ${constructorName(input)}`;
  const methods = methodNames(input).filter((m) => !FUNCTION_OPTIONS.has(m));
  if (methods.length > 0) return `${what} with methods ${methods.join(', ')}`;
  const keys = Object.keys(input);
  if (keys.length > 0 && !keys.some((k) => IOREDIS_OPTIONS.has(k))) {
    return `${what} with no ioredis option (keys: ${keys.slice(0, 5).join(', ')})`;
  }
  return undefined;
}

/** An instance of a class of the platform (`Map`, `Set`, `Date`, `URL`, …), not of the application's own. */
function isBuiltIn(input: object): boolean {
  if (input instanceof URL || ArrayBuffer.isView(input)) return true;
  const ctor = (input as { constructor?: unknown }).constructor;
  return typeof ctor === 'function' && /\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(ctor));
}

/** The names of `input`'s methods, own and inherited (below `Object.prototype`), but its constructor. */
function methodNames(input: object): string[] {
  const names = new Set<string>();
  for (let o: object | null = input; o && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (name === 'constructor') continue;
      const d = Object.getOwnPropertyDescriptor(o, name);
      if (d && typeof d.value === 'function') names.add(name);
    }
  }
  return [...names];
}
