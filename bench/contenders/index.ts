import { bareSpec } from './bare.contender.js';
import type { ContenderSpec } from './contender.js';
import { glideSpec, iovalkeySpec, nodeRedisSpec } from './driver.contender.js';
import { engineSpec, serviceSpec } from './library.contender.js';
import { redlockFastSpec, redlockSpec } from './redlock.contender.js';
import { semaphoreFastSpec, semaphoreSpec } from './semaphore.contender.js';

/** Every contender of the side-by-side scenarios, in the order of even repetitions. */
export const CONTENDERS: readonly ContenderSpec[] = [
  bareSpec,
  engineSpec,
  serviceSpec,
  iovalkeySpec,
  nodeRedisSpec,
  glideSpec,
  redlockSpec,
  redlockFastSpec,
  semaphoreSpec,
  semaphoreFastSpec,
];

export type { Contender, ContenderSpec } from './contender.js';
