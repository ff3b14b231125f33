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
