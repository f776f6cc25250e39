// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest';

import {
  CELL_PROGRESS_MIME,
  CellProgressRenderer,
  endedInside,
  formatSeconds,
  jobsDoneText,
  runningTasks,
  shownElapsed,
  summaryText,
  tasksText
} from '../src/cellProgress';
import type { CellProgress, CellProgressGroup } from '../src/protocol';
import { FakeKernel } from './fakes';
import { inside } from './fixtures';

function entry(fields: Partial<CellProgressGroup> = {}): CellProgressGroup {
  return {
    id: 'a:4',
    session: 'a',
    state: 'running',
    description: 'spark.range(20000).count()',
    jobs: 2,
    jobs_running: 1,
    jobs_done: 1,
    tasks: { total: 20008, done: 1208, active: 2, failed: 0 },
    job: {
      id: 1,
      name: 'count at In [4] line 3',
      tasks: { total: 20000, done: 1200, active: 2, failed: 0 }
    },
    stage: { id: 10, name: 'count', total: 20000, done: 1200, active: 2 },
    submitted_at: 1000,
    elapsed: 12.3,
    ui_url: 'http://127.0.0.1:4040',
    operations_page: '',
    cancellable: true,
    error: '',
    inside: null,
    ...fields
  };
}

function model(data: CellProgress): any {
  return { data: { [CELL_PROGRESS_MIME]: data }, metadata: {}, trusted: true };
}

async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await Promise.resolve();
  }
}

let renderer: CellProgressRenderer | null = null;
afterEach(() => {
  renderer?.dispose();
  renderer = null;
});

describe('the texts', () => {
  it('says tasks, seconds and the summary as the kernel does', () => {
    expect(tasksText(entry().tasks)).toBe('1,208/20,008 tasks (2 running)');
    expect(formatSeconds(12.34, false)).toBe('12 s');
    expect(formatSeconds(12.34, true)).toBe('12.3 s');
    expect(formatSeconds(65, false)).toBe('1 min 05 s');
    const ended = entry({
      state: 'succeeded',
      cancellable: false,
      tasks: { total: 8, done: 8, active: 0, failed: 0 }
    });
    expect(summaryText(ended)).toBe('succeeded · 2 jobs · 8/8 tasks · 12.3 s');
    const failed = entry({
      state: 'failed',
      cancellable: false,
      tasks: { total: 2, done: 0, active: 0, failed: 1 },
      jobs: 1,
      error: 'ZeroDivisionError: integer division or modulo by zero'
    });
    expect(summaryText(failed)).toBe(
      'failed · 1 job · 0/2 tasks, 1 failed · 12.3 s · ZeroDivisionError: integer division or modulo by zero'
    );
  });

  it("shows a long cell's jobs done and the running job's own tasks", () => {
    // Issue 28 (9): not a total over the jobs seen so far, which grew with each.
    const loop = entry({ jobs: 11, jobs_done: 10 });
    expect(jobsDoneText(loop)).toBe('10 jobs done');
    expect(runningTasks(loop)).toEqual(loop.job!.tasks);
    // Between two jobs: no figure; before the first ends: the group's.
    expect(runningTasks(entry({ job: null, stage: null }))).toBeNull();
    const first = entry({ jobs: 1, jobs_done: 0, job: null, stage: null });
    expect(jobsDoneText(first)).toBe('');
    expect(runningTasks(first)).toEqual(first.tasks);
  });

  it('ticks the elapsed time only while the group can still run', () => {
    expect(shownElapsed(entry(), false, 3)).toBeCloseTo(15.3);
    expect(shownElapsed(entry(), true, 3)).toBeCloseTo(12.3);
    expect(shownElapsed(entry({ cancellable: false }), false, 3)).toBeCloseTo(
      12.3
    );
  });
});

describe('the view', () => {
  it('shows progress and a Cancel that asks the kernel on the control channel', async () => {
    const kernel = new FakeKernel();
    renderer = new CellProgressRenderer(() => kernel as any);
    await renderer.renderModel(
      model({ version: 1, cell: 4, final: false, groups: [entry()] })
    );
    const node = renderer.node;
    const bar = node.querySelector('progress') as HTMLProgressElement;
    expect(bar.value).toBe(1200); // the running job's own progress
    expect(bar.max).toBe(20000);
    expect(node.textContent).toContain('1 job done');
    expect(node.textContent).toContain('1,200/20,000 tasks (2 running)');
    const jobLink = node.querySelector(
      '.jp-SparkCell-job'
    ) as HTMLAnchorElement;
    expect(jobLink.getAttribute('href')).toMatch(
      /spark-sessions\/ui\/4040\/jobs\/job\/\?id=1$/
    );
    const cancel = node.querySelector(
      '[data-testid="spark-cell-cancel"]'
    ) as HTMLButtonElement;
    cancel.click();
    await flush();
    expect(kernel.futures).toHaveLength(1);
    const sent = kernel.futures[0].msg;
    expect(sent.channel).toBe('control');
    expect(sent.content).toMatchObject({
      action: 'cancel',
      groups: ['a:4'],
      source: 'cell'
    });
    const pending = node.querySelector(
      '[data-testid="spark-cell-cancel"]'
    ) as HTMLButtonElement;
    expect(pending.disabled).toBe(true);
    expect(pending.textContent).toBe('Cancelling…');
  });

  it("links a Connect session's job to the server UI's operations page", async () => {
    renderer = new CellProgressRenderer(() => null);
    const connect = entry({
      ui_url: 'http://127.0.0.1:4045',
      operations_page: 'connect/session/?id=s-1&userId='
    });
    await renderer.renderModel(
      model({ version: 1, cell: 4, final: false, groups: [connect] })
    );
    const jobLink = renderer.node.querySelector('.jp-SparkCell-job');
    expect(jobLink?.getAttribute('href')).toMatch(
      /spark-sessions\/ui\/4045\/connect\/session\/\?id=s-1&userId=$/
    );
  });

  it('between two jobs shows the jobs done and a bar without a figure', async () => {
    renderer = new CellProgressRenderer(() => null);
    const between = entry({ jobs: 3, jobs_done: 3, job: null, stage: null });
    await renderer.renderModel(
      model({ version: 1, cell: 4, final: false, groups: [between] })
    );
    const node = renderer.node;
    const bar = node.querySelector('progress') as HTMLProgressElement;
    expect(bar.hasAttribute('value')).toBe(false); // indeterminate
    expect(node.querySelector('[data-testid="spark-cell-tasks"]')).toBeNull();
    expect(
      node.querySelector('[data-testid="spark-cell-jobs-done"]')?.textContent
    ).toBe('3 jobs done');
  });

  it('ends as one summary line per group, with no bar and no Cancel', async () => {
    renderer = new CellProgressRenderer(() => null);
    const ended = entry({
      state: 'cancelled',
      cancellable: false,
      job: null,
      stage: null,
      tasks: { total: 8, done: 3, active: 0, failed: 0 }
    });
    await renderer.renderModel(
      model({ version: 1, cell: 4, final: true, groups: [ended] })
    );
    const node = renderer.node;
    expect(node.querySelector('progress')).toBeNull();
    expect(node.querySelector('button')).toBeNull();
    const summary = node.querySelector('[data-testid="spark-cell-summary"]');
    expect(summary?.textContent).toBe(
      'cancelled · 2 jobs · 3/8 tasks · 12.3 s'
    );
  });

  it('says so in one line when the notebook has no kernel to ask', async () => {
    renderer = new CellProgressRenderer(() => null);
    await renderer.renderModel(
      model({ version: 1, cell: 4, final: false, groups: [entry()] })
    );
    (renderer.node.querySelector('button') as HTMLButtonElement).click();
    await flush();
    expect(renderer.node.textContent).toContain(
      'This notebook has no kernel to ask.'
    );
  });
});

describe('inside the groups', () => {
  it("shows each group's stages, chart and findings under its line while it runs", async () => {
    renderer = new CellProgressRenderer(() => null);
    const plain = entry({ id: 'b:4', session: 'b' });
    await renderer.renderModel(
      model({
        version: 1,
        cell: 4,
        final: false,
        groups: [entry({ inside: inside() }), plain]
      })
    );
    const node = renderer.node;
    const [row, under, other] = Array.from(node.children) as HTMLElement[];
    expect(row.dataset.testid).toBe('spark-cell-group');
    expect(under.dataset.testid).toBe('jss-inside');
    expect(under.dataset.group).toBe('a:4');
    // the group's line is as before: the inside is not in it
    expect(row.querySelector('[data-testid="jss-inside"]')).toBeNull();
    expect(
      Array.from(under.querySelectorAll('[data-testid="jss-stage-row"]')).map(
        r => (r as HTMLElement).dataset.stage
      )
    ).toEqual(['3', '4']);
    expect(
      under.querySelector('[data-testid="jss-hidden-stages"]')
    ).not.toBeNull();
    expect(
      under.querySelectorAll('[data-testid="jss-slot-lane"]')
    ).toHaveLength(2);
    expect(under.querySelectorAll('[data-testid="jss-finding"]')).toHaveLength(
      1
    );
    // a group with nothing known inside (inside: null) has its line only
    expect(other.dataset.group).toBe('b:4');
    expect(node.children).toHaveLength(3);
  });

  it('keeps the same inside across the clock redraws, and in the summary line at the end', async () => {
    renderer = new CellProgressRenderer(() => null);
    await renderer.renderModel(
      model({
        version: 1,
        cell: 4,
        final: false,
        groups: [entry({ inside: inside() })]
      })
    );
    const drawn = renderer.node.querySelector('[data-testid="jss-inside"]');
    (renderer as any)._draw(); // what the 1 s clock does
    expect(renderer.node.querySelector('[data-testid="jss-inside"]')).toBe(
      drawn
    );
    const ended = entry({
      state: 'succeeded',
      cancellable: false,
      job: null,
      stage: null,
      inside: inside({ findings: [] })
    });
    await renderer.renderModel(
      model({ version: 1, cell: 4, final: true, groups: [ended] })
    );
    // One row: the summary, then "▸ N stages" (collapsed: nothing was found).
    const [summary, ...others] = Array.from(renderer.node.children);
    expect(others).toHaveLength(0);
    expect(
      summary.querySelector('[data-testid="spark-cell-summary"]')
    ).not.toBeNull();
    const under = summary.querySelector('[data-testid="spark-cell-inside"]')!;
    expect((under as HTMLDetailsElement).open).toBe(false);
    expect(
      under.querySelectorAll('[data-testid="jss-stage-row"]')
    ).toHaveLength(2);
    expect(under.querySelector('[data-testid="jss-finding"]')).toBeNull();
  });
});

describe("an ended group's inside", () => {
  it('is collapsed under the summary unless the diagnosis found something', () => {
    const quiet = endedInside(inside({ findings: [] }));
    expect(quiet.tagName).toBe('DETAILS');
    expect((quiet as HTMLDetailsElement).open).toBe(false);
    expect(quiet.querySelector('summary')?.textContent).toBe('4 stages');
    const found = endedInside(inside());
    expect((found as HTMLDetailsElement).open).toBe(true);
    expect(found.querySelector("[data-testid='jss-finding']")).not.toBeNull();
  });
});
