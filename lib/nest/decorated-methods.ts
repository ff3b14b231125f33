import type { DiscoveryService, MetadataScanner } from '@nestjs/core';

/** A provider or controller as Nest's discovery hands it over. */
type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** A method of an application's class that carries a decorator's metadata. */
export interface DecoratedMethod<Spec> {
  /** What the decorator recorded under its metadata key. */
  readonly spec: Spec;
  /** The method itself (the decorator's wrapper). */
  readonly method: (...args: unknown[]) => unknown;
  /** The provider or controller that has it, as Nest discovered it. */
  readonly wrapper: InstanceWrapper;
}

/**
 * Every method of `wrappers` (the application's providers, or controllers) whose function carries metadata under
 * `key`: the one discovery loop of the Nest layer's explorers (`@Leader`, the `@Semaphore` start-up check). A class
 * Nest has not instantiated is read from its prototype; a factory provider (no class to read) is skipped.
 */
export function decoratedMethods<Spec>(
  wrappers: readonly InstanceWrapper[],
  scanner: MetadataScanner,
  key: symbol | string,
): DecoratedMethod<Spec>[] {
  const found: DecoratedMethod<Spec>[] = [];
  for (const wrapper of wrappers) {
    const instance: unknown = wrapper.instance;
    const prototype: unknown =
      instance && typeof instance === 'object'
        ? Object.getPrototypeOf(instance)
        : wrapper.inject
          ? undefined
          : wrapper.metatype?.prototype;
    if (!prototype || typeof prototype !== 'object') continue;
    for (const name of scanner.getAllMethodNames(prototype)) {
      const method = (prototype as Record<string, unknown>)[name];
      if (typeof method !== 'function') continue;
      const spec = Reflect.getMetadata(key, method) as Spec | undefined;
      if (spec !== undefined) found.push({ spec, method: method as (...args: unknown[]) => unknown, wrapper });
    }
  }
  return found;
}

/** The application's providers and, when asked, its controllers. */
export function applicationClasses(discovery: DiscoveryService, controllers: boolean): InstanceWrapper[] {
  return controllers ? [...discovery.getProviders(), ...discovery.getControllers()] : discovery.getProviders();
}
