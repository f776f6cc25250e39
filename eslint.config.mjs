// Lint of the TypeScript labextension (flat config; typescript-eslint + prettier).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'lib/',
      'node_modules/',
      'jupyter_spark_sessions/labextension/',
      '.venv/',
      '.yarn/',
      'coverage/',
      '**/*.d.ts'
    ]
  },
  {
    files: ['labextension/**/*.ts', 'labextension/**/*.tsx'],
    extends: [
      js.configs.recommended,
      ...tseslint.configs.recommended,
      prettier
    ],
    rules: {
      '@typescript-eslint/naming-convention': [
        'error',
        {
          selector: 'interface',
          format: ['PascalCase'],
          custom: { regex: '^I[A-Z]', match: true },
          filter: {
            // protocol types mirror the kernel's names
            regex:
              '^(TaskCounts|Stage|Job|Group|Session|SessionFile|Board|ReplyError|ErrorReply|OkReply)$',
            match: false
          }
        }
      ],
      '@typescript-eslint/no-unused-vars': ['warn', { args: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-namespace': 'off',
      '@typescript-eslint/no-use-before-define': 'off',
      curly: ['error', 'all'],
      eqeqeq: 'error',
      'prefer-arrow-callback': 'error'
    }
  },
  {
    files: ['labextension/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off'
    }
  }
);
