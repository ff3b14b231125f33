import { CLUSTER_PERMIT_KINDS } from './lock-worlds.js';
import { permitSemantics } from './permits.suite.js';

// The semaphore semantics on a Redis Cluster, through each client library (one Redis and memory: permits.spec.ts).
permitSemantics(CLUSTER_PERMIT_KINDS);
