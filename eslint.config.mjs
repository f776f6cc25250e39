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
      '.venv-*/',
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
          custom: { regex: '^I[A-Z]', match: true }
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
    // Generated from the protocol's JSON Schema: its names are the schema's.
    files: ['labextension/src/protocol.ts'],
    rules: {
      '@typescript-eslint/naming-convention': 'off'
    }
  },
  {
    files: ['labextension/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off'
    }
  }
);
