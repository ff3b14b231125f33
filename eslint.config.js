import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'dist-sample/**',
      'dist-bench/**',
      '.ab-*/**',
      'node_modules/**',
      'coverage/**',
      'test/consumers/*/dist/**',
      'test/consumers/*/node_modules/**',
      'test/consumers/*/doc-snippets/**',
      'test/consumers/.cache/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Type-aware lint for every TypeScript file: a promise nobody awaits or catches is an error everywhere.
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // TypeScript itself reports undefined names.
      'no-undef': 'off',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  // The library gets the whole type-checked rule set.
  {
    files: ['lib/**/*.ts'],
    ignores: ['lib/**/*.spec.ts'],
    extends: [tseslint.configs.recommendedTypeCheckedOnly],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    files: ['test/**/*.ts', 'lib/**/*.spec.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  // The consumer apps are separate projects with their own compilers and dependencies (checked by test:consumers).
  { files: ['test/consumers/**'], extends: [tseslint.configs.disableTypeChecked] },
);
