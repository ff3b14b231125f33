/**
 * How long a key remembers the last fencing token it issued after that grant's lease, in milliseconds: one hour. A
 * token is the server's time in microseconds, or one more than the key's last token when that is later, so tokens
 * rise across holds even when a server's clock steps back (or a failover lands on a server whose clock is behind)
 * by up to this much while the key is free. Each grant writes a small tombstone (`<prefix>{<key>}:fence`) that
 * expires `leaseMs` + this after the grant: the cost is one string key per key used in the last hour. NTP refuses to
 * step a clock by more than 1,000 s without an operator (its panic threshold), well inside this.
 */
export const FENCE_MEMORY_MS = 3_600_000;
