import { decoratedMethods } from './decorated-methods.js';
import { Injectable, Logger } from '@nestjs/common';
import type { BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LEADER_METADATA } from '../leader/leader-method.js';
import type { LeaderMethodSpec } from '../leader/leader-method.js';
import type { Leadership, StopCampaign } from '../leader/leader.types.js';
import { LockService } from './lock.service.js';

/**
 * Finds the `@Leader` methods of the application's providers once it has started, and campaigns for each
 * (`LockService.campaign`); on shutdown, stops every campaign: a leader's signal aborts, its method is awaited and its
 * lock released, so a standby takes over at once. Methods of request-scoped providers are skipped (with a warning).
 */
@Injectable()
export class LeaderExplorer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('RedisLock');
  private readonly stops: StopCampaign[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly locks: LockService,
  ) {}

  onApplicationBootstrap(): void {
    const found = decoratedMethods<LeaderMethodSpec>(this.discovery.getProviders(), this.scanner, LEADER_METADATA);
    for (const { spec, method, wrapper } of found) {
      const instance: unknown = wrapper.instance;
      if (!wrapper.isDependencyTreeStatic() || !instance || typeof instance !== 'object') {
        this.logger.warn(`@Leader on ${spec.method}: not a singleton provider, so nothing campaigns for it`);
        continue;
      }
      const run = (lead: Leadership) => (method as (lead: Leadership) => unknown).call(instance, lead);
      this.stops.push(this.locks.campaign(spec.name, run, spec.options));
    }
  }

  /**
   * Ends every term before the lock service shuts down: methods awaited (`shutdownTimeoutMs` at most), locks released.
   * The engine's shutdown begins first (as `LockService` begins it in this same phase, whichever hook Nest runs first),
   * so a leader's signal says it was leading when the application shut down, with its term.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.locks.engine.beginShutdown();
    await Promise.all(this.stops.splice(0).map((stop) => stop()));
  }
}
