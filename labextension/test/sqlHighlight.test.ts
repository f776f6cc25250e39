import { StringStream } from '@codemirror/language';
import { describe, expect, it } from 'vitest';

import { isSparkSqlCell, sparkSqlCellParser } from '../src/sqlHighlight';

/** Each line's (text, token style) pairs, as the editor would tokenize them. */
function tokens(source: string): [string, string | null][][] {
  const parser = sparkSqlCellParser;
  const state = parser.startState!(2);
  return source.split('\n').map(line => {
    if (!line) {
      parser.blankLine!(state, 2);
      return [];
    }
    const stream = new StringStream(line, 4, 2);
    const found: [string, string | null][] = [];
    while (!stream.eol()) {
      stream.start = stream.pos;
      const style = parser.token(stream, state);
      const text = line.slice(stream.start, stream.pos).trim();
      if (text) {
        found.push([text, style]);
      }
    }
    return found;
  });
}

describe('%%spark_sql cells', () => {
  it('are the cells whose first line is the magic', () => {
    expect(isSparkSqlCell('%%spark_sql a -n 5\nSELECT 1')).toBe(true);
    expect(isSparkSqlCell('  %%spark_sql\nSELECT 1')).toBe(true);
    expect(isSparkSqlCell('%%spark_sqlx\nSELECT 1')).toBe(false);
    expect(isSparkSqlCell('x = 1\n%%spark_sql a\nSELECT 1')).toBe(false);
    expect(isSparkSqlCell('%spark_sql SELECT 1')).toBe(false);
  });

  it('keep the magic line as it is and read the body as Spark SQL', () => {
    const [magic, body, rest] = tokens(
      "%%spark_sql a -n 5 select\nSELECT count(*) FROM t\nWHERE s = 'x' -- note"
    );
    expect(magic).toEqual([['%%spark_sql a -n 5 select', null]]);
    expect(body).toContainEqual(['SELECT', 'keyword']);
    expect(body).toContainEqual(['FROM', 'keyword']);
    expect(body).toContainEqual(['t', 'variable']);
    expect(rest).toContainEqual(["'x'", 'string']);
    expect(rest).toContainEqual(['-- note', 'comment']);
  });
});
