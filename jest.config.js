/** Jest in native ESM mode (see package.json "test"): SWC compiles TypeScript with legacy decorators and metadata. */
const swc = {
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    keepClassNames: true,
  },
  module: { type: 'es6' },
  sourceMaps: 'inline',
};

export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', swc] },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/lib/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  // The consumer apps have their own runner (npm run test:consumers), dependencies and specs.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/consumers/'],
  modulePathIgnorePatterns: ['<rootDir>/test/consumers/'],
  testTimeout: 30_000,
  maxWorkers: 2,
};
