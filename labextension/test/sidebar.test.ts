// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest';

// The real LabIcon pulls web components that do not load in Node.
vi.mock('@jupyterlab/ui-components', () => ({
  LabIcon: class {
    constructor(readonly options: unknown) {}
  }
}));

import { CONTROL_REQUEST } from '../src/messages';
import { MESSAGES } from '../src/status';
import { SIDEBAR_ID, SparkSessionsSidebar } from '../src/sidebar';
import { FakeKernel, FakePanel, FakeTracker, PLAIN_KERNEL_INFO } from './fakes';
import { board, group, job, query, session, tasks } from './fixtures';

async function flush(): Promise<void> {
  for (let i = 0; i < 30; i++) {
    await Promise.resolve();
  }
}

/** A message as the sidebar shows it: backticks become <code>, not text. */
function shown(message: string): string {
  return message.replace(/`/g, '');
}

const BASE_URL = 'http://127.0.0.1:8888/lab-base/';

function q(root: HTMLElement, testid: string): HTMLElement[] {
  return Array.from(root.querySelectorAll(`[data-testid="${testid}"]`));
}

let sidebar: SparkSessionsSidebar | null = null;

afterEach(() => {
  sidebar?.dispose();
  sidebar = null;
});

async function connected(initial = board()) {
  const tracker = new FakeTracker();
  const kernel = new FakeKernel();
  const panel = new FakePanel(kernel, 'work/etl.ipynb');
  sidebar = new SparkSessionsSidebar(tracker as any, undefined, {
    baseUrl: BASE_URL
  });
  tracker.setCurrent(panel);
  await flush(); // kernel_info answered: the extension is loaded
  kernel.futures[0].reply({
    version: 1,
    status: 'ok',
    action: 'list',
    request_id: null,
    board: initial
  });
  await flush();
  return { tracker, kernel, panel, sidebar, root: sidebar.node };
}

describe('SparkSessionsSidebar', () => {
  it('has the stable id, title and the no-kernel message', () => {
    sidebar = new SparkSessionsSidebar(new FakeTracker() as any);
    expect(sidebar.node.id).toBe(SIDEBAR_ID);
    expect(SIDEBAR_ID).toBe('jupyter-spark-sessions-sidebar');
    expect(sidebar.title.label).toBe('Spark');
    expect(sidebar.title.caption).toBe('Spark Sessions');
    const empty = q(sidebar.node, 'jss-empty');
    expect(empty).toHaveLength(1);
    expect(empty[0].textContent).toBe(MESSAGES.noKernel);
    expect(sidebar.node.textContent).toContain(
      '%load_ext jupyter_spark_sessions'
    );
  });

  it('renders sessions, groups and per-job progress per the DOM contract', async () => {
    const { root } = await connected(
      board({
        sessions: [session({ name: 'etl' })],
        groups: [
          group({
            id: 'etl:3',
            execution_count: 3,
            submitted_at: 900,
            state: 'succeeded',
            completed_at: 910
          }),
          group({
            id: 'etl:12',
            jobs: [
              job({
                id: 1,
                tasks: tasks({ total: 8, completed: 5, skipped: 1 })
              }),
              job({ id: 2, tasks: tasks({ total: 4, completed: 0 }) })
            ]
          })
        ]
      })
    );
    expect(q(root, 'jss-empty')).toHaveLength(0);
    const sessions = q(root, 'jss-session');
    expect(sessions.map(s => s.dataset.session)).toEqual(['etl']);
    const groups = q(root, 'jss-group');
    expect(groups.map(g => g.dataset.group)).toEqual(['etl:12', 'etl:3']);
    expect(groups.map(g => g.dataset.state)).toEqual(['running', 'succeeded']);
    const bars = q(groups[0], 'jss-job-progress');
    expect(bars.map(b => [b.dataset.completed, b.dataset.total])).toEqual([
      ['6', '8'],
      ['0', '4']
    ]);
    const [runningCancel] = q(
      groups[0],
      'jss-cancel-group'
    ) as HTMLButtonElement[];
    const [doneCancel] = q(
      groups[1],
      'jss-cancel-group'
    ) as HTMLButtonElement[];
    expect(runningCancel.disabled).toBe(false);
    expect(doneCancel.disabled).toBe(true);
    expect(
      (q(root, 'jss-cancel-session')[0] as HTMLButtonElement).disabled
    ).toBe(false);
  });

  it("lists each session's files under it", async () => {
    const { root } = await connected(
      board({
        sessions: [
          session({
            name: 'etl',
            files: [
              { name: 'lookup.csv', kind: 'file', size: 512 },
              { name: 'refdata', kind: 'archive', size: 3 * 1024 * 1024 }
            ]
          }),
          session({ name: 'model' })
        ],
        groups: []
      })
    );
    const files = q(root, 'jss-session-file');
    expect(files.map(f => f.textContent)).toEqual([
      'lookup.csv (file, 512 B)',
      'refdata (archive, 3.0 MB)'
    ]);
    const [etl] = q(root, 'jss-session');
    expect(etl.parentElement?.contains(files[0])).toBe(true);
  });

  it('names the backend and shows a disconnected Connect session', async () => {
    const { root } = await connected(
      board({
        sessions: [
          session({ name: 'etl' }),
          session({
            name: 'remote',
            backend: 'connect',
            master: 'sc://localhost:15002',
            disconnected: 'sc://localhost:15002 unreachable: Connection refused'
          })
        ],
        groups: []
      })
    );
    const sessions = q(root, 'jss-session');
    expect(sessions.map(s => s.dataset.session)).toEqual(['etl', 'remote']);
    expect(sessions[1].textContent).toContain('connect');
    expect(sessions[1].textContent).toContain('sc://localhost:15002');
    const warnings = q(root, 'jss-session-disconnected');
    expect(warnings).toHaveLength(1);
    expect(sessions[1].contains(warnings[0])).toBe(true);
    expect(warnings[0].textContent).toBe(
      'Disconnected: sc://localhost:15002 unreachable: Connection refused'
    );
  });

  it('shows cancelling on click and the reported state after the push', async () => {
    const { root, kernel } = await connected();
    (q(root, 'jss-cancel-group')[0] as HTMLButtonElement).click();
    let row = q(root, 'jss-group')[0];
    expect(row.dataset.state).toBe('cancelling');
    expect((q(row, 'jss-cancel-group')[0] as HTMLButtonElement).disabled).toBe(
      true
    );
    expect(kernel.futures[1].msg.content).toMatchObject({
      action: 'cancel',
      groups: ['etl:12']
    });
    kernel.futures[1].reply({
      version: 1,
      status: 'error',
      request_id: null,
      error: {
        code: 'unknown_group',
        message: "No job group 'etl:12' on the board."
      }
    });
    await flush();
    expect(q(root, 'jss-error')[0].textContent).toBe(
      "No job group 'etl:12' on the board."
    );
    row = q(root, 'jss-group')[0];
    expect(row.dataset.state).toBe('running');

    (q(root, 'jss-cancel-session')[0] as HTMLButtonElement).click();
    expect(q(root, 'jss-group')[0].dataset.state).toBe('cancelling');
    expect(q(root, 'jss-error')).toHaveLength(0);
    kernel.comms[0].push({
      version: 1,
      type: 'board',
      board: board({
        seq: 2,
        groups: [group({ state: 'cancelled', completed_at: 1004 })]
      })
    });
    expect(q(root, 'jss-group')[0].dataset.state).toBe('cancelled');
  });

  it('reconnects after a restart: loading state first, then the new board', async () => {
    const { root, kernel, panel } = await connected();
    const oldComm = kernel.comms[0];
    panel.sessionContext.setStatus('restarting');
    expect(oldComm.closed).toBe(true);
    expect(q(root, 'jss-session')).toHaveLength(0);
    expect(q(root, 'jss-empty')[0].textContent).toBe(MESSAGES.connecting);
    panel.sessionContext.setStatus('idle');
    await flush();
    expect(kernel.futures).toHaveLength(2);
    kernel.futures[1].reply({
      version: 1,
      status: 'ok',
      action: 'list',
      request_id: null,
      board: board({ seq: 0, sessions: [], groups: [] })
    });
    await flush();
    expect(q(root, 'jss-empty')[0].textContent).toBe(
      shown(MESSAGES.noSessions)
    );
    expect(kernel.comms).toHaveLength(2);
  });

  it('follows the current notebook and drops back to no-kernel', async () => {
    const { root, tracker } = await connected();
    expect(q(root, 'jss-session')).toHaveLength(1);
    tracker.setCurrent(null);
    expect(q(root, 'jss-session')).toHaveLength(0);
    expect(q(root, 'jss-empty')[0].textContent).toBe(MESSAGES.noKernel);
  });
});

describe('SparkSessionsSidebar header and empty states', () => {
  it('names the notebook and the kernel it follows, and follows a rename', async () => {
    const { root, panel } = await connected();
    expect(q(root, 'jss-notebook')[0].textContent).toBe('etl.ipynb');
    expect(q(root, 'jss-notebook')[0].title).toBe('work/etl.ipynb');
    expect(q(root, 'jss-kernel')[0].textContent).toBe('Python 3 (ipykernel)');
    expect(q(root, 'jss-status')[0].textContent).toBe('connected');
    panel.rename('work/etl-2026.ipynb');
    expect(q(root, 'jss-notebook')[0].textContent).toBe('etl-2026.ipynb');
  });

  it('shows a kernel without the extension as not loaded, with the command as code', async () => {
    const tracker = new FakeTracker();
    const kernel = new FakeKernel();
    kernel.kernelInfo = PLAIN_KERNEL_INFO;
    sidebar = new SparkSessionsSidebar(tracker as any, undefined, {
      baseUrl: BASE_URL
    });
    tracker.setCurrent(new FakePanel(kernel, 'plain.ipynb'));
    await flush();
    const root = sidebar.node;
    expect(q(root, 'jss-status')[0].dataset.status).toBe('not-loaded');
    expect(q(root, 'jss-status')[0].textContent).toBe('not loaded');
    const empty = q(root, 'jss-empty')[0];
    expect(empty.textContent).toBe(shown(MESSAGES.notLoaded));
    expect(empty.textContent).not.toContain('`');
    expect(
      Array.from(empty.querySelectorAll('code')).map(c => c.textContent)
    ).toEqual(['%load_ext jupyter_spark_sessions']);
    expect(kernel.futures).toHaveLength(0);
  });

  it('renders the hints of the no-kernel state without literal backticks', () => {
    sidebar = new SparkSessionsSidebar(new FakeTracker() as any);
    expect(sidebar.node.textContent).not.toContain('`');
    expect(
      Array.from(sidebar.node.querySelectorAll('code')).map(c => c.textContent)
    ).toEqual([
      '%load_ext jupyter_spark_sessions',
      '%spark_session create NAME'
    ]);
    expect(q(sidebar.node, 'jss-notebook')).toHaveLength(0);
  });
});

describe('SparkSessionsSidebar progress, timeline and Spark UI links', () => {
  it("shows each running stage's progress under its job", async () => {
    const { root } = await connected(
      board({
        groups: [
          group({
            jobs: [
              job({
                id: 4,
                tasks: tasks({ total: 30, completed: 10, active: 2 }),
                stages: [
                  {
                    id: 7,
                    name: 'collect at <cell>:3',
                    attempt: 0,
                    tasks: tasks({ total: 20, completed: 5, active: 2 })
                  }
                ]
              })
            ]
          })
        ]
      })
    );
    const [stage] = q(root, 'jss-stage-progress') as HTMLProgressElement[];
    expect(stage.dataset.stage).toBe('7');
    expect([stage.dataset.completed, stage.dataset.total]).toEqual(['5', '20']);
    expect(stage.value).toBeCloseTo(0.25);
    expect(stage.parentElement?.textContent).toBe('Stage 75/20, 2 running');
  });

  it("draws the session's recent groups as bars colored by state", async () => {
    const { root } = await connected(
      board({
        groups: [
          group({
            id: 'etl:3',
            execution_count: 3,
            state: 'failed',
            submitted_at: 900,
            completed_at: 950
          }),
          group({ id: 'etl:12', submitted_at: 960 })
        ]
      })
    );
    const [timeline] = q(root, 'jss-timeline');
    expect(timeline.dataset.session).toBe('etl');
    const bars = Array.from(
      timeline.querySelectorAll<SVGRectElement>(
        '[data-testid="jss-timeline-bar"]'
      )
    );
    expect(bars.map(b => [b.dataset.group, b.dataset.state])).toEqual([
      ['etl:3', 'failed'],
      ['etl:12', 'running']
    ]);
    expect(bars[0].getAttribute('class')).toContain('jp-mod-failed');
    expect(timeline.querySelector('svg')).not.toBeNull();
    expect(timeline.textContent).toContain('now');
  });

  it('links sessions and jobs to the Spark UI through the server, when it is on', async () => {
    const { root } = await connected(
      board({
        sessions: [
          session({ name: 'etl', ui_url: 'http://10.1.2.3:4041' }),
          session({ name: 'off', ui_url: '' }),
          session({
            name: 'remote',
            backend: 'connect',
            ui_url: 'http://localhost:4050'
          })
        ],
        groups: [
          group({ id: 'etl:12', jobs: [job({ id: 31 })] }),
          group({ id: 'off:1', session: 'off', jobs: [job({ id: 32 })] }),
          group({
            id: 'remote:1',
            session: 'remote',
            jobs: [job({ id: 1, operation_id: 'op-1' })]
          })
        ]
      })
    );
    const sessionLinks = q(root, 'jss-session-ui-link') as HTMLAnchorElement[];
    expect(sessionLinks.map(a => a.getAttribute('href'))).toEqual([
      `${BASE_URL}spark-sessions/ui/4041/jobs/`,
      `${BASE_URL}spark-sessions/ui/4050/jobs/`
    ]);
    const jobLinks = q(root, 'jss-job-ui-link') as HTMLAnchorElement[];
    expect(jobLinks.map(a => a.getAttribute('href'))).toEqual([
      `${BASE_URL}spark-sessions/ui/4041/jobs/job/?id=31`
    ]);
    for (const link of [...sessionLinks, ...jobLinks]) {
      expect(link.target).toBe('_blank');
      expect(link.rel).toContain('noopener');
    }
    // without a UI, and for a Connect operation: the job's name, no link
    const off = q(root, 'jss-group').find(g => g.dataset.group === 'off:1')!;
    expect(off.querySelector('a')).toBeNull();
    expect(off.textContent).toContain('Job 32');
  });

  it("says once when a session's Spark UI is not protected", async () => {
    const { root } = await connected(
      board({
        sessions: [
          session({
            name: 'mine',
            ui_url: 'http://127.0.0.1:4041',
            ui_protected: true
          }),
          session({
            name: 'theirs',
            ui_url: 'http://127.0.0.1:4042',
            ui_protected: false
          }),
          session({ name: 'off', ui_url: '', ui_protected: false })
        ]
      })
    );
    const notes = q(root, 'jss-session-ui-unprotected');
    expect(notes).toHaveLength(1);
    expect(
      notes[0]
        .closest('[data-testid="jss-session"]')!
        .getAttribute('data-session')
    ).toBe('theirs');
    expect(notes[0].textContent).toBe(
      'Spark UI not protected: other local users can read it'
    );
  });
});

describe('SparkSessionsSidebar.currentTarget', () => {
  it('is null without a notebook, then the connection, model and path', async () => {
    sidebar = new SparkSessionsSidebar(new FakeTracker() as any);
    expect(sidebar.currentTarget()).toBeNull();
    sidebar.dispose();

    const tracker = new FakeTracker();
    const kernel = new FakeKernel();
    sidebar = new SparkSessionsSidebar(tracker as any);
    tracker.setCurrent(new FakePanel(kernel, 'work/nb.ipynb'));
    const target = sidebar.currentTarget();
    expect(target?.notebookPath).toBe('work/nb.ipynb');
    expect(target?.model).toBe(sidebar.model);
    expect(target?.connection).toBe(sidebar.connection);
    expect(target?.connection.kernel).toBe(kernel);

    tracker.setCurrent(null);
    expect(sidebar.currentTarget()).toBeNull();
  });
});

describe("SparkSessionsSidebar: a long group's jobs", () => {
  const loop = group({
    jobs: [
      ...Array.from({ length: 5 }, (_, i) =>
        job({ id: i, status: 'SUCCEEDED', state: 'succeeded' })
      ),
      job({ id: 5 })
    ]
  });

  it('expands on click, stays so across boards, and forgets a group that went', async () => {
    const { root, sidebar } = await connected(board({ groups: [loop] }));
    expect(q(root, 'jss-job')).toHaveLength(1);
    q(root, 'jss-jobs-toggle')[0].click();
    expect(q(root, 'jss-job')).toHaveLength(6);
    sidebar.model.applyBoard(board({ seq: 2, groups: [loop] }));
    expect(q(root, 'jss-job')).toHaveLength(6);
    sidebar.model.applyBoard(board({ seq: 3, groups: [] }));
    sidebar.model.applyBoard(board({ seq: 4, groups: [loop] }));
    expect(q(root, 'jss-job')).toHaveLength(1);
  });
});

describe('SparkSessionsSidebar: streaming queries (issue 36)', () => {
  const rates = query();
  const sums = query({
    id: 'q-sums',
    run_id: 'run-sums',
    name: 'sums',
    started_at: 995,
    batch_id: 4
  });
  const streaming = board({
    sessions: [session({ active_queries: 2 })],
    groups: [],
    queries: [rates, sums]
  });

  function rowOf(root: HTMLElement, name: string): HTMLElement {
    return q(root, 'jss-query').find(r => r.dataset.query === name)!;
  }

  function stopOf(root: HTMLElement, name: string): HTMLButtonElement {
    return q(rowOf(root, name), 'jss-stop-query')[0] as HTMLButtonElement;
  }

  /** A board patch on top of seq `base`. */
  function patch(base: number, fields: Record<string, unknown> = {}) {
    return {
      version: 1,
      type: 'board_patch',
      seq: base + 1,
      base_seq: base,
      updated_at: 1000 + base,
      groups: [],
      removed_groups: [],
      other_running_jobs: 0,
      error: '',
      ...fields
    };
  }

  it('sends exactly one stop_query on the control channel, showing stopping at once', async () => {
    const { root, kernel } = await connected(streaming);
    expect(q(root, 'jss-query').map(r => r.dataset.query)).toEqual([
      'sums',
      'rates'
    ]);
    stopOf(root, 'rates').click();

    expect(kernel.futures).toHaveLength(2); // the list, then the stop
    const sent = kernel.futures[1].msg;
    expect(sent.channel).toBe('control');
    expect(sent.header.msg_type).toBe(CONTROL_REQUEST);
    expect(sent.content).toEqual({
      version: 1,
      action: 'stop_query',
      query: rates.run_id,
      source: 'sidebar',
      request_id: expect.any(String)
    });
    // not waiting for the answer: the row says stopping, its Stop is off
    expect(rowOf(root, 'rates').dataset.state).toBe('stopping');
    expect(stopOf(root, 'rates').disabled).toBe(true);
    expect(stopOf(root, 'rates').textContent).toBe('Stopping\u2026');
    // the other query of the session is untouched
    expect(rowOf(root, 'sums').dataset.state).toBe('active');
    expect(stopOf(root, 'sums').disabled).toBe(false);

    kernel.futures[1].reply({
      version: 1,
      status: 'ok',
      action: 'stop_query',
      request_id: sent.content.request_id,
      query: { ...rates, state: 'stopping', stop_source: 'sidebar' }
    });
    await flush();
    expect(rowOf(root, 'rates').dataset.state).toBe('stopping');
    expect(q(root, 'jss-error')).toHaveLength(0);

    // Spark reports its end: the patch carries every query
    kernel.comms[0].push(
      patch(1, {
        queries: [
          {
            ...rates,
            state: 'stopped',
            ended_at: 1003,
            stop_source: 'sidebar'
          },
          sums
        ]
      })
    );
    const stopped = rowOf(root, 'rates');
    expect(stopped.dataset.state).toBe('stopped');
    expect(stopped.classList.contains('jp-mod-ended')).toBe(true);
    expect(q(stopped, 'jss-stop-query')).toHaveLength(0);
    expect(kernel.futures).toHaveLength(2);
  });

  it('updates the rows from a patch with queries, keeps them through one without', async () => {
    const { root, kernel } = await connected(streaming);
    const comm = kernel.comms[0];
    comm.push(
      patch(1, {
        queries: [
          { ...rates, batch_id: 95, process_rate: 1500 },
          {
            ...sums,
            state: 'failed',
            ended_at: 1002,
            error: 'ValueError: bad row in foreachBatch'
          }
        ]
      })
    );
    const figures = (name: string) =>
      q(rowOf(root, name), 'jss-query-details')[0].textContent;
    expect(figures('rates')).toContain('batch 95');
    expect(figures('rates')).toContain('processed 1.5K rows/s');
    expect(rowOf(root, 'sums').dataset.state).toBe('failed');
    expect(q(rowOf(root, 'sums'), 'jss-query-error')[0].textContent).toBe(
      'ValueError: bad row in foreachBatch'
    );

    // a patch about groups only: the queries stay as they were
    comm.push(patch(2, { groups: [group({ id: 'etl:20' })] }));
    expect(q(root, 'jss-group').map(g => g.dataset.group)).toEqual(['etl:20']);
    expect(q(root, 'jss-query').map(r => r.dataset.state)).toEqual([
      'active',
      'failed'
    ]);
    expect(figures('rates')).toContain('batch 95');

    // an empty list is a change too: no query left
    comm.push(patch(3, { queries: [] }));
    expect(q(root, 'jss-query')).toHaveLength(0);
  });

  it('shows why a stop was refused, and the query active again', async () => {
    const { root, kernel } = await connected(streaming);
    stopOf(root, 'sums').click();
    expect(rowOf(root, 'sums').dataset.state).toBe('stopping');
    kernel.futures[1].reply({
      version: 1,
      status: 'error',
      request_id: kernel.futures[1].msg.content.request_id,
      error: {
        code: 'unknown_query',
        message: "No streaming query 'run-sums' in this kernel (it ended)."
      }
    });
    await flush();
    expect(q(root, 'jss-error')[0].textContent).toBe(
      "No streaming query 'run-sums' in this kernel (it ended)."
    );
    expect(rowOf(root, 'sums').dataset.state).toBe('active');
    expect(stopOf(root, 'sums').disabled).toBe(false);
  });
});
