/** Injection token of the ioredis client the articles are stored with. */
export const ARTICLES_REDIS = Symbol('ARTICLES_REDIS');
