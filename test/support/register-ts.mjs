// `node --import ./test/support/register-ts.mjs file.ts`: runs TypeScript sources with the hooks of ts-loader.mjs.
import { register } from 'node:module';

register('./ts-loader.mjs', import.meta.url);
