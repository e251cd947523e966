// Lint runs in the test command: the type-aware rules catch floating promises, which in a
// queue worker are lost reconciles.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// eslint's own defineConfig (typescript-eslint deprecates its `config()` helper in its favour).
export default defineConfig(
  { ignores: ['node_modules/**', '.cache/**', '.sandbox/**', 'dist/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Lower layers do not import upper ones: base/ stands on nothing of Ripple's, kube/ and queue/ on base/ (and
  // queue/ on kube/), never on the runtime, the watcher, the functions, the ops server or the CLI.
  {
    files: ['base/**/*.ts', 'kube/**/*.ts', 'queue/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(\\.\\./)+(runtime|watcher|functions|ops|cli|status|sandbox|sdk)/', message: 'a lower layer: take this from base/ (or move it there)' }] },
      ],
    },
  },
  {
    files: ['base/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./', message: 'base/ imports none of Ripple\'s other folders' }] }],
    },
  },
);
