import { describe, expect, it, vi } from 'vitest';

import { SidebarModel, newestFirst } from '../src/model';
import { MESSAGES } from '../src/status';
import { board, group, query, session, tasks } from './fixtures';

function readyModel(initial = board()): SidebarModel {
  const model = new SidebarModel();
  model.reset('Python 3');
  model.applyBoard(initial);
  return model;
}

describe('status transitions and empty messages', () => {
  it('starts without a kernel', () => {
    const model = new SidebarModel();
    expect(model.status).toBe('no-kernel');
    expect(model.board).toBeNull();
    expect(model.emptyMessage()).toBe(
      'Open a notebook to see its Spark sessions.'
    );
  });

  it('goes connecting -> ready on the first board', () => {
    const model = new SidebarModel();
    model.reset('Python 3');
    expect(model.status).toBe('connecting');
    expect(model.kernelName).toBe('Python 3');
    model.applyBoard(board());
    expect(model.status).toBe('ready');
    expect(model.emptyMessage()).toBeNull();
  });

  it('keeps the followed notebook name across a reset, and tells its renames', () => {
    const model = new SidebarModel();
    const seen: string[] = [];
    model.connect(m => seen.push(m.notebookName));
    model.reset('Python 3', 'etl.ipynb');
    expect(model.notebookName).toBe('etl.ipynb');
    model.setNotebookName('etl.ipynb'); // unchanged: no event
    model.setNotebookName('etl-v2.ipynb');
    expect(seen).toEqual(['etl.ipynb', 'etl-v2.ipynb']);
    model.reset(null);
    expect(model.notebookName).toBe('');
  });

  it('says how to load the extension when the kernel has not', () => {
    const model = new SidebarModel();
    model.reset('Python 3');
    model.setStatus('not-loaded');
    expect(model.emptyMessage()).toBe(
      'This kernel has not loaded jupyter_spark_sessions: run `%load_ext jupyter_spark_sessions`.'
    );
  });

  it('says how to create a session when the board has none', () => {
    const model = readyModel(board({ sessions: [], groups: [] }));
    expect(model.emptyMessage()).toBe(
      'No sessions yet: run `%spark_session create NAME`.'
    );
    expect(MESSAGES.noSessions).toBe(model.emptyMessage());
  });

  it('keeps the error message on one line', () => {
    const model = new SidebarModel();
    model.reset('k');
    model.setStatus('error', 'boom\n  at line 2');
    expect(model.status).toBe('error');
    expect(model.error).toBe('boom at line 2');
    expect(model.emptyMessage()).toBe(MESSAGES.error);
  });

  it('reset (kernel restart or switch) drops board, overlays and error', () => {
    const model = readyModel();
    model.markCancelling(['etl:12']);
    model.setError('something');
    model.reset('Python 3');
    expect(model.status).toBe('connecting');
    expect(model.board).toBeNull();
    expect(model.error).toBe('');
    expect(model.isCancelRequested('etl:12')).toBe(false);
    model.reset(null);
    expect(model.status).toBe('no-kernel');
  });

  it('notifies listeners on change and stops after unsubscribing', () => {
    const model = new SidebarModel();
    const listener = vi.fn();
    const disconnect = model.connect(listener);
    model.reset('k');
    model.applyBoard(board());
    expect(listener).toHaveBeenCalledTimes(2);
    disconnect();
    model.applyBoard(board({ seq: 2 }));
    expect(listener).toHaveBeenCalledTimes(2);
  });
});

describe('applying pushes', () => {
  it('replaces the board with each newer push', () => {
    const model = readyModel();
    const pushed = board({
      seq: 2,
      groups: [
        group({
          tasks: tasks({ total: 8, completed: 8 }),
          state: 'succeeded',
          completed_at: 1010
        })
      ]
    });
    expect(model.applyBoard(pushed)).toBe(true);
    expect(model.board).toBe(pushed);
    expect(model.board?.groups[0].state).toBe('succeeded');
  });

  it('ignores a board older than the current one', () => {
    const model = readyModel(board({ seq: 5 }));
    const stale = board({ seq: 4, sessions: [] });
    expect(model.applyBoard(stale)).toBe(false);
    expect(model.board?.seq).toBe(5);
    expect(model.sessions()).toHaveLength(1);
  });

  it('accepts any seq after a reset (a restarted kernel counts from 0)', () => {
    const model = readyModel(board({ seq: 50 }));
    model.reset('k');
    expect(model.applyBoard(board({ seq: 0 }))).toBe(true);
    expect(model.board?.seq).toBe(0);
  });

  it('lists groups per session newest first, and orphan groups apart', () => {
    const model = readyModel(
      board({
        sessions: [session({ name: 'a' }), session({ name: 'b' })],
        groups: [
          group({
            id: 'a:1',
            session: 'a',
            execution_count: 1,
            submitted_at: 10
          }),
          group({
            id: 'a:3',
            session: 'a',
            execution_count: 3,
            submitted_at: 30
          }),
          group({
            id: 'b:2',
            session: 'b',
            execution_count: 2,
            submitted_at: 20
          }),
          group({ id: 'gone:4', session: 'gone', execution_count: 4 })
        ]
      })
    );
    expect(model.groupsOf('a').map(g => g.id)).toEqual(['a:3', 'a:1']);
    expect(model.groupsOf('b').map(g => g.id)).toEqual(['b:2']);
    expect(model.orphanGroups().map(g => g.id)).toEqual(['gone:4']);
  });
});

describe('cancel overlay', () => {
  it('shows cancelling from the click while the board still says running', () => {
    const model = readyModel();
    expect(model.displayState(model.board!.groups[0])).toBe('running');
    expect(model.canCancel(model.board!.groups[0])).toBe(true);
    model.markCancelling(['etl:12']);
    const g = model.board!.groups[0];
    expect(g.state).toBe('running');
    expect(model.displayState(g)).toBe('cancelling');
    expect(model.canCancel(g)).toBe(false);
    // more pushes that still say running keep the overlay
    model.applyBoard(board({ seq: 2 }));
    expect(model.displayState(model.board!.groups[0])).toBe('cancelling');
  });

  it('then shows the state the board reports (cancelled)', () => {
    const model = readyModel();
    model.markCancelling(['etl:12']);
    model.applyBoard(
      board({ seq: 2, groups: [group({ state: 'cancelling' })] })
    );
    expect(model.displayState(model.board!.groups[0])).toBe('cancelling');
    model.applyBoard(
      board({
        seq: 3,
        groups: [group({ state: 'cancelled', completed_at: 1005 })]
      })
    );
    expect(model.displayState(model.board!.groups[0])).toBe('cancelled');
    expect(model.isCancelRequested('etl:12')).toBe(false);
  });

  it('shows a different final state if that is what the board reports', () => {
    const model = readyModel();
    model.markCancelling(['etl:12']);
    model.applyBoard(
      board({ seq: 2, groups: [group({ state: 'succeeded' })] })
    );
    expect(model.displayState(model.board!.groups[0])).toBe('succeeded');
  });

  it('never turns into a final state by itself', () => {
    vi.useFakeTimers();
    try {
      const model = readyModel();
      model.markCancelling(['etl:12']);
      model.cancelAnswered(['etl:12'], {
        version: 1,
        request_id: 'r1',
        action: 'cancel',
        status: 'ok',
        cancelling: ['etl:12'],
        messages: []
      });
      vi.advanceTimersByTime(10 * 60 * 1000);
      expect(model.displayState(model.board!.groups[0])).toBe('cancelling');
      expect(model.board!.groups[0].state).toBe('running');
    } finally {
      vi.useRealTimers();
    }
  });

  it('is not applied to groups that are not running', () => {
    const model = readyModel(
      board({ groups: [group({ state: 'succeeded' })] })
    );
    model.markCancelling(['etl:12', 'unknown:1']);
    expect(model.isCancelRequested('etl:12')).toBe(false);
    expect(model.isCancelRequested('unknown:1')).toBe(false);
    expect(model.displayState(model.board!.groups[0])).toBe('succeeded');
  });

  it('goes away for groups the reply does not list, with its messages', () => {
    const model = readyModel(
      board({
        groups: [
          group({ id: 'etl:12' }),
          group({ id: 'etl:13', execution_count: 13 })
        ]
      })
    );
    model.markCancelling(['etl:12', 'etl:13']);
    model.cancelAnswered(['etl:12', 'etl:13'], {
      version: 1,
      request_id: null,
      action: 'cancel',
      status: 'ok',
      cancelling: ['etl:12'],
      messages: ['Group etl:13 has no running job (succeeded).']
    });
    expect(model.isCancelRequested('etl:12')).toBe(true);
    expect(model.isCancelRequested('etl:13')).toBe(false);
    expect(model.error).toBe('Group etl:13 has no running job (succeeded).');
  });

  it('goes away on an error reply, which is shown', () => {
    const model = readyModel();
    model.markCancelling(['etl:12']);
    model.cancelAnswered(['etl:12'], {
      version: 1,
      request_id: null,
      status: 'error',
      error: {
        code: 'unknown_group',
        message: "No job group 'etl:12' on the board."
      }
    });
    expect(model.displayState(model.board!.groups[0])).toBe('running');
    expect(model.error).toBe("No job group 'etl:12' on the board.");
  });

  it('goes away when the request fails', () => {
    const model = readyModel();
    model.markCancelling(['etl:12']);
    model.cancelFailed(['etl:12'], 'Cancel failed: timeout');
    expect(model.displayState(model.board!.groups[0])).toBe('running');
    expect(model.error).toBe('Cancel failed: timeout');
  });

  it('runningGroupIds lists what a session cancel aims at', () => {
    const model = readyModel(
      board({
        sessions: [session({ name: 'a' }), session({ name: 'b' })],
        groups: [
          group({ id: 'a:1', session: 'a' }),
          group({ id: 'a:2', session: 'a', state: 'failed' }),
          group({ id: 'b:1', session: 'b' })
        ]
      })
    );
    expect(model.runningGroupIds('a')).toEqual(['a:1']);
    expect(model.runningGroupIds()).toEqual(['a:1', 'b:1']);
    model.markCancelling(['a:1']);
    expect(model.runningGroupIds('a')).toEqual([]);
    expect(model.hasActiveGroups()).toBe(true);
  });
});

describe('group order', () => {
  it('sorts newest first by submission then execution count', () => {
    const sorted = newestFirst([
      group({ id: 'x:1', execution_count: 1, submitted_at: 5 }),
      group({ id: 'x:2', execution_count: 2, submitted_at: null }),
      group({ id: 'x:3', execution_count: 3, submitted_at: 5 })
    ]);
    expect(sorted.map(g => g.id)).toEqual(['x:3', 'x:1', 'x:2']);
  });
});

describe("a streaming query's stop overlay", () => {
  const rates = query();
  const ok = (state: 'stopping' | 'active', error = '') => ({
    version: 1 as const,
    status: 'ok' as const,
    action: 'stop_query' as const,
    request_id: 'r1',
    query: { ...rates, state, error }
  });

  it('shows stopping from the click until the board reports the query not active', () => {
    const model = readyModel(board({ queries: [rates] }));
    model.markStopping(rates.run_id);
    expect(model.queryState(rates)).toBe('stopping');
    model.stopAnswered(rates.run_id, ok('stopping'));
    expect(model.queryState(rates)).toBe('stopping');
    model.applyBoard(board({ seq: 2, queries: [rates] })); // an older poll's view
    expect(model.queryState(model.board!.queries[0])).toBe('stopping');
    const ended = { ...rates, state: 'stopped' as const, ended_at: 1003 };
    model.applyBoard(board({ seq: 3, queries: [ended] }));
    expect(model.queryState(ended)).toBe('stopped');
    // the overlay went with it: the same run active again is not "stopping"
    model.applyBoard(board({ seq: 4, queries: [rates] }));
    expect(model.queryState(rates)).toBe('active');
  });

  it('drops the overlay on an error or a stop not taken, and says why', () => {
    const model = readyModel(board({ queries: [rates] }));
    model.markStopping(rates.run_id);
    model.stopAnswered(rates.run_id, {
      version: 1,
      status: 'error',
      request_id: 'r1',
      error: { code: 'unknown_query', message: 'No such query.' }
    });
    expect(model.queryState(rates)).toBe('active');
    expect(model.error).toBe('No such query.');

    model.markStopping(rates.run_id);
    expect(model.error).toBe('');
    model.stopAnswered(
      rates.run_id,
      ok('active', 'Could not send the stop: py4j gone')
    );
    expect(model.queryState(rates)).toBe('active');
    expect(model.error).toBe('Could not send the stop: py4j gone');
  });

  it('marks only an active query of the board, and forgets overlays on reset', () => {
    const failed = query({ run_id: 'r-failed', state: 'failed' });
    const model = readyModel(board({ queries: [rates, failed] }));
    model.markStopping('r-failed');
    model.markStopping('not-on-the-board');
    expect(model.queryState(failed)).toBe('failed');
    model.markStopping(rates.run_id);
    model.reset('Python 3');
    model.applyBoard(board({ queries: [rates] }));
    expect(model.queryState(rates)).toBe('active');
  });

  it("lists a session's queries by the state shown", () => {
    const other = query({ id: 'b1', run_id: 'b1', session: 'b' });
    const model = readyModel(board({ queries: [rates, other] }));
    expect(model.queriesOf('etl').shown).toEqual([rates]);
    expect(model.queriesOf('b').shown).toEqual([other]);
    expect(model.queriesOf('none').shown).toEqual([]);
  });
});
