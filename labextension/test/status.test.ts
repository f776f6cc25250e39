import { describe, expect, it } from 'vitest';

import { headerStatus } from '../src/status';
import { session } from './fixtures';

describe("the header's status", () => {
  const gone =
    'the Spark driver of this kernel is gone (its JVM exited with signal 9)';

  it("says the kernel connection's status while Spark answers", () => {
    expect(headerStatus('ready', [session()])).toEqual({
      status: 'ready',
      label: 'connected',
      title: ''
    });
    expect(headerStatus('connecting', []).label).toBe('connecting');
  });

  it('says the sessions are disconnected once their driver died (issue 28, 6)', () => {
    const lost = [
      session({ name: 'a', disconnected: gone }),
      session({ name: 'b', disconnected: gone })
    ];
    expect(headerStatus('ready', lost)).toEqual({
      status: 'disconnected',
      label: 'sessions disconnected',
      title: gone
    });
    const some = [lost[0], session({ name: 'c' })];
    expect(headerStatus('ready', some).label).toBe(
      '1 of 2 sessions disconnected'
    );
  });
});
