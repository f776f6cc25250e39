/*
 * labextension/src/protocol.ts is generated from the protocol's one definition,
 * jupyter_spark_sessions/protocol.schema.json: this test fails while the
 * committed file is not what the schema generates now, and
 * `jlpm generate:protocol` (this test with --update) rewrites it.
 */
import { compile, JSONSchema } from 'json-schema-to-typescript';
import { format, resolveConfig } from 'prettier';
import { describe, expect, it } from 'vitest';

import schema from '../../jupyter_spark_sessions/protocol.schema.json';

const GENERATED = '../src/protocol.ts';

const BANNER = `/**
 * GENERATED from jupyter_spark_sessions/protocol.schema.json (the protocol's
 * one definition) by json-schema-to-typescript: do not edit. After changing
 * the schema, run \`jlpm generate:protocol\`; labextension/test/protocol.test.ts
 * fails while this file is out of date. The protocol's constants and helpers
 * are in messages.ts.
 */`;

/** The TypeScript the schema generates, formatted as the repository's prettier does. */
async function generateProtocol(): Promise<string> {
  const code = await compile(schema as JSONSchema, 'ProtocolMessage', {
    bannerComment: BANNER,
    // No index signatures: the schema closes every object.
    additionalProperties: false,
    // `groups` (1 to 1000 ids) stays a plain array, not a tuple union.
    ignoreMinAndMaxItems: true,
    format: false
  });
  const style = await resolveConfig(new URL(GENERATED, import.meta.url));
  return format(code, { ...style, parser: 'typescript' });
}

describe('protocol.ts', () => {
  // Formatting the generated file takes seconds on a loaded machine (CI runs the
  // targets side by side): a generous timeout.
  it('is what json-schema-to-typescript generates from the schema now', async () => {
    await expect(
      await generateProtocol(),
      'protocol.ts is out of date: run `jlpm generate:protocol`'
    ).toMatchFileSnapshot(GENERATED);
  }, 60_000);
});
