import { createRequire } from 'node:module';
import { join } from 'node:path';
import { errorText } from '../common/error-text.js';

/** What the job timing uses of the `cron` package's `CronTime`. */
export interface CronTimeLike {
  /** The next `n` ticks from now. */
  sendAt(n: number): readonly { toMillis(): number }[];
  /** The first tick strictly after `start` (whole seconds), computed in `zone`. */
  getNextDateFrom(start: Date, zone?: string): { toMillis(): number };
  readonly timeZone?: string;
  readonly utcOffset?: number;
}

type CronTimeClass = new (source: string, timeZone?: string | null, utcOffset?: number | null) => CronTimeLike;

/**
 * A `CronTime` of the `cron` package (what `@nestjs/schedule` schedules with), loaded on first use so that the library
 * does not depend on it. Tried as `cron`, then as `@nestjs/schedule`'s own dependency (where a strict installer such as
 * pnpm keeps it out of the application's reach). Rejects when neither loads or the expression is invalid.
 */
export async function loadCronTime(
  source: string,
  timeZone: string | undefined,
  utcOffset: number | undefined,
): Promise<CronTimeLike> {
  const CronTime = await cronTimeClass();
  return new CronTime(source, timeZone ?? null, utcOffset ?? null);
}

let loaded: Promise<CronTimeClass> | undefined;

function cronTimeClass(): Promise<CronTimeClass> {
  loaded ??= (import('cron') as Promise<{ CronTime: CronTimeClass }>)
    .catch(() => {
      // `@nestjs/schedule` as the application finds it: from its entry script, else from the working directory.
      const bases = [process.argv[1], join(process.cwd(), 'package.json')].filter(
        (b): b is string => typeof b === 'string' && b !== '',
      );
      let lastError: unknown;
      for (const base of bases) {
        try {
          return createRequire(createRequire(base).resolve('@nestjs/schedule'))('cron') as { CronTime: CronTimeClass };
        } catch (err) {
          lastError = err;
        }
      }
      throw lastError;
    })
    .then((m) => m.CronTime)
    .catch((err: unknown) => {
      loaded = undefined;
      throw new Error(`the "cron" package (a dependency of @nestjs/schedule) cannot be loaded: ${errorText(err)}`);
    });
  return loaded;
}
