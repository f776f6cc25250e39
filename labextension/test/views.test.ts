// @vitest-environment happy-dom
import { describe, expect, it, vi } from 'vitest';

import { jobLink, renderGroups } from '../src/groupView';
import { SidebarModel } from '../src/model';
import { packagesText, renderSession, shareText } from '../src/sessionView';
import { LANE_HEIGHT } from '../src/timelineView';
import { IViewContext } from '../src/viewContext';
import { board, group, inside, job, session, tasks } from './fixtures';

/** A render context on a model showing `initial`, recording what views ask. */
function context(connected: boolean, initial = board()) {
  const model = new SidebarModel();
  model.reset('Python 3');
  model.applyBoard(initial);
  const refreshes: Array<(now: number) => void> = [];
  const expanded = new Set<string>();
  const ctx: IViewContext = {
    model,
    now: 1010,
    baseUrl: '/base/',
    connected,
    cancel: vi.fn(),
    stopQuery: vi.fn(),
    everySecond: refresh => refreshes.push(refresh),
    isExpanded: id => expanded.has(id),
    toggleExpanded: vi.fn((id: string) => {
      if (!expanded.delete(id)) {
        expanded.add(id);
      }
    })
  };
  return { ctx, refreshes };
}

function q(root: HTMLElement, testid: string): HTMLElement[] {
  return Array.from(root.querySelectorAll(`[data-testid="${testid}"]`));
}

describe('the group view', () => {
  it('cancels a running group through the context, and ticks its elapsed time', () => {
    const { ctx, refreshes } = context(true);
    const list = renderGroups([group()], null, ctx);
    const [cancel] = q(list, 'jss-cancel-group') as HTMLButtonElement[];
    expect(cancel.disabled).toBe(false);
    cancel.click();
    expect(ctx.cancel).toHaveBeenCalledWith({ groups: ['etl:12'] });
    const elapsed = list.querySelector('.jp-SparkSessions-elapsed')!;
    const before = elapsed.textContent;
    expect(refreshes).toHaveLength(1);
    refreshes[0](1070);
    expect(elapsed.textContent).not.toBe(before);
  });

  it('disables Cancel without a connection', () => {
    const { ctx } = context(false);
    const list = renderGroups([group()], null, ctx);
    expect((q(list, 'jss-cancel-group')[0] as HTMLButtonElement).disabled).toBe(
      true
    );
  });
});

describe("a group's jobs", () => {
  // Issue 28 (9): a cell running 20 jobs in a loop listed 20 rows.
  const ended = (id: number, state: 'succeeded' | 'failed' = 'succeeded') =>
    job({ id, status: state.toUpperCase(), state, completed_at: 1005 });
  const loop = group({
    jobs: [...Array.from({ length: 19 }, (_, i) => ended(i)), job({ id: 19 })]
  });

  it('lists the running job and counts the others, all of them on click', () => {
    const { ctx } = context(true);
    let list = renderGroups([loop], null, ctx);
    expect(q(list, 'jss-job').map(j => j.dataset.job)).toEqual(['19']);
    const [toggle] = q(list, 'jss-jobs-toggle');
    expect(toggle.textContent).toBe('\u25b8 19 earlier jobs: 19 succeeded');
    toggle.click();
    expect(ctx.toggleExpanded).toHaveBeenCalledWith('etl:12');
    list = renderGroups([loop], null, ctx); // the sidebar redraws
    expect(q(list, 'jss-job')).toHaveLength(20);
    expect(q(list, 'jss-jobs-toggle')[0].textContent).toBe(
      '\u25be All 20 jobs'
    );
  });

  it('lists a few jobs whole, and the last one of an ended long group', () => {
    const { ctx } = context(true);
    const few = group({ jobs: [ended(0), ended(1), job({ id: 2 })] });
    let list = renderGroups([few], null, ctx);
    expect(q(list, 'jss-job')).toHaveLength(3);
    expect(q(list, 'jss-jobs-toggle')).toHaveLength(0);
    const done = group({
      state: 'succeeded',
      jobs: [ended(0), ended(1, 'failed'), ended(2), ended(3)]
    });
    list = renderGroups([done], null, ctx);
    expect(q(list, 'jss-job').map(j => j.dataset.job)).toEqual(['3']);
    expect(q(list, 'jss-jobs-toggle')[0].textContent).toBe(
      '\u25b8 3 earlier jobs: 2 succeeded, 1 failed'
    );
  });

  it("names an ended job's state, and links only the live driver's jobs", () => {
    const { ctx } = context(true);
    const withUi = session({ ui_url: 'http://127.0.0.1:4040' });
    const cancelled = group({
      state: 'cancelled',
      jobs: [
        job({
          id: 3,
          status: 'FAILED',
          state: 'cancelled',
          previous_driver: true,
          tasks: tasks({ total: 1 })
        }),
        job({ id: 4 })
      ]
    });
    const list = renderGroups([cancelled], withUi, ctx);
    const [old, live] = q(list, 'jss-job');
    expect(old.textContent).toBe('Job 30/1 tasks \u00b7 cancelled');
    expect(old.querySelector('a')).toBeNull();
    expect(live.querySelector('a')?.getAttribute('href')).toBe(
      '/base/spark-sessions/ui/4040/jobs/job/?id=4'
    );
  });

  it("links a Connect operation to the server UI's page of its session's operations", () => {
    const connect = session({
      backend: 'connect',
      ui_url: 'http://127.0.0.1:4045',
      operations_page: 'connect/session/?id=s-1&userId=ann'
    });
    const operation = job({ id: 1, operation_id: 'op-1' });
    expect(jobLink(operation, connect, '/base/')).toBe(
      '/base/spark-sessions/ui/4045/connect/session/?id=s-1&userId=ann'
    );
    // A remote server's UI is not known: no link, as before.
    const remote = session({ backend: 'connect' });
    expect(jobLink(operation, remote, '/base/')).toBeNull();
    expect(
      jobLink(job({ previous_driver: true }), connect, '/base/')
    ).toBeNull();
  });
});

describe('the session view', () => {
  it("cancels the session's groups, and redraws its timeline each second", () => {
    const { ctx, refreshes } = context(true);
    const block = renderSession(session(), ctx);
    (q(block, 'jss-cancel-session')[0] as HTMLButtonElement).click();
    expect(ctx.cancel).toHaveBeenCalledWith({ session: 'etl' });
    // the timeline and the one group's elapsed time
    expect(refreshes).toHaveLength(2);
    const [timeline] = q(block, 'jss-timeline');
    const bar = timeline.querySelector('[data-testid="jss-timeline-bar"]')!;
    for (const refresh of refreshes) {
      refresh(1070);
    }
    expect(timeline.querySelectorAll('svg')).toHaveLength(1);
    expect(timeline.contains(bar)).toBe(false); // drawn anew
  });

  it("moves an ended timeline's caption with the clock, its bars drawn once", () => {
    // Issue 47 (8): nothing runs, the board sends nothing, the caption stood still.
    const ended = group({ state: 'succeeded', completed_at: 1005 });
    const { ctx, refreshes } = context(true, board({ groups: [ended] }));
    const block = renderSession(session(), ctx);
    const [timeline] = q(block, 'jss-timeline');
    const bar = timeline.querySelector('[data-testid="jss-timeline-bar"]')!;
    const [axis] = q(timeline, 'jss-timeline-axis');
    expect(axis.textContent).toBe('1m 05s ago5s ago'); // at 1010
    for (const refresh of refreshes) {
      refresh(1100);
    }
    expect(axis.textContent).toBe('2m 35s ago1m 35s ago');
    expect(timeline.contains(bar)).toBe(true); // not drawn anew
    expect(bar.getAttribute('height')).toBe(String(LANE_HEIGHT));
    expect(LANE_HEIGHT).toBeGreaterThanOrEqual(12); // readable: 6 px was a line
  });

  it('shows its running tasks against the slots, and its share of them', () => {
    const shared = session({ slots: 4, share: 'weight 3, at least 1 slot' });
    const { ctx } = context(true, board({ sessions: [shared] }));
    const [share] = q(renderSession(shared, ctx), 'jss-session-share');
    expect(share.textContent).toBe(
      '2 of 4 slots \u00b7 weight 3, at least 1 slot'
    );
    // Ended groups hold no slot; Spark Connect knows no slots; FIFO has no share.
    const ended = group({ id: 'etl:13', state: 'succeeded' });
    expect(shareText(session({ slots: 2 }), [group(), ended])).toBe(
      '2 of 2 slots'
    );
    expect(shareText(session({ share: 'weight 1' }), [group()])).toBe(
      '2 tasks running \u00b7 weight 1'
    );
    expect(shareText(session(), [ended])).toBe('');
  });

  it('shows its own Python packages, and nothing when it has none', () => {
    const own = session({ packages: 'jsspkg==1.0, -r req.txt' });
    const { ctx } = context(true, board({ sessions: [own] }));
    const [packages] = q(renderSession(own, ctx), 'jss-session-packages');
    expect(packages.textContent).toBe('packages: jsspkg==1.0, -r req.txt');
    expect(packages.classList).toContain('jp-SparkSessions-packages');
    // The kernel's packages only: no element, no text.
    const plain = renderSession(session(), context(true).ctx);
    expect(q(plain, 'jss-session-packages')).toHaveLength(0);
    expect(plain.textContent).not.toContain('packages');
    expect(packagesText(session())).toBe('');
  });

  it('says so when the session has no jobs', () => {
    const { ctx, refreshes } = context(true, board({ groups: [] }));
    const block = renderSession(session(), ctx);
    expect(block.textContent).toContain('No jobs yet.');
    expect(q(block, 'jss-timeline')).toHaveLength(0);
    expect(refreshes).toHaveLength(0);
    expect(
      (q(block, 'jss-cancel-session')[0] as HTMLButtonElement).disabled
    ).toBe(true);
  });
});

describe('the layout at 250 px (issue 39, 4)', () => {
  it("puts Cancel all beside the session's name, its details on a line of their own", () => {
    const { ctx } = context(true);
    const [row] = q(renderSession(session(), ctx), 'jss-session');
    const parts = Array.from(row.children).map(c => c.className);
    expect(parts).toEqual([
      'jp-SparkSessions-sessionName',
      'jp-SparkSessions-button',
      'jp-SparkSessions-sessionInfo'
    ]);
    // the share is among the details, not beside the button
    expect(
      row.querySelector(
        '.jp-SparkSessions-sessionInfo [data-testid="jss-session-share"]'
      )
    ).not.toBeNull();
  });

  it("keeps a group's elapsed time and Cancel together, after its id and state", () => {
    const { ctx } = context(true);
    const top = renderGroups([group()], null, ctx).querySelector(
      '.jp-SparkSessions-groupTop'
    )!;
    expect(Array.from(top.children).map(c => c.className)).toEqual([
      'jp-SparkSessions-groupId',
      'jp-SparkSessions-badge jp-mod-running',
      'jp-SparkSessions-groupActions'
    ]);
    // the id may wrap after its session's name, and reads as one
    const id = top.firstElementChild!;
    expect(id.textContent).toBe('etl:12');
    expect(id.innerHTML).toBe('etl:<wbr>12');
    const actions = top.lastElementChild!;
    expect(actions.children[0].className).toBe('jp-SparkSessions-elapsed');
    expect((actions.children[1] as HTMLElement).dataset.testid).toBe(
      'jss-cancel-group'
    );
  });
});

describe('inside a group, in the sidebar', () => {
  it('is collapsed, its stages and findings counted in its summary', () => {
    const withInside = group({ inside: inside() });
    const { ctx } = context(true, board({ groups: [withInside] }));
    const list = renderGroups([withInside], null, ctx);
    const [details] = q(list, 'jss-group-inside') as HTMLDetailsElement[];
    expect(details.tagName).toBe('DETAILS');
    expect(details.open).toBe(false);
    const summary = details.querySelector('summary')!;
    expect(summary.textContent).toBe('4 stages · 1 finding');
    expect(
      summary.querySelector('.jp-SparkInside-summaryFindings')?.textContent
    ).toBe('1 finding');
    // the rows, chart and findings are in it, the chart drawn for 250 px
    expect(q(details, 'jss-stage-row')).toHaveLength(2);
    expect(q(details, 'jss-finding')).toHaveLength(1);
    const [chart] = q(details, 'jss-slot-chart');
    expect(chart.getAttribute('viewBox')).toBe('0 0 220 50');
    expect(q(details, 'jss-stage-mark')).toHaveLength(3);
  });

  it('stays open across the redraws of the board, until its group is gone', () => {
    const withInside = group({ inside: inside() });
    const { ctx } = context(true, board({ groups: [withInside] }));
    const first = q(
      renderGroups([withInside], null, ctx),
      'jss-group-inside'
    )[0] as HTMLDetailsElement;
    first.open = true;
    first.dispatchEvent(new Event('toggle'));
    const again = q(
      renderGroups([withInside], null, ctx),
      'jss-group-inside'
    )[0] as HTMLDetailsElement;
    expect(again.open).toBe(true);
    // a new kernel numbers its cells again: a later etl:12 starts collapsed
    ctx.model.applyBoard(board({ seq: 2, groups: [] }));
    renderGroups([], null, ctx);
    ctx.model.applyBoard(board({ seq: 3, groups: [withInside] }));
    const later = q(
      renderGroups([withInside], null, ctx),
      'jss-group-inside'
    )[0] as HTMLDetailsElement;
    expect(later.open).toBe(false);
  });

  it('is not there when nothing is known inside the group', () => {
    const { ctx } = context(true);
    expect(
      q(renderGroups([group()], null, ctx), 'jss-group-inside')
    ).toHaveLength(0);
  });
});
