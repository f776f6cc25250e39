// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';

import {
  MAX_LANES,
  hiddenStagesText,
  insideSummaryText,
  isEmptyInside,
  renderInside,
  renderSlotChart,
  secondsText,
  sizeText,
  stageFiguresText,
  stageTasksText
} from '../src/insideView';
import { inside, slotChart, stageRow } from './fixtures';

function q(root: Element, testid: string): Element[] {
  return Array.from(root.querySelectorAll(`[data-testid="${testid}"]`));
}

function cells(row: Element): string[] {
  return Array.from(row.querySelectorAll('td')).map(td => td.textContent!);
}

describe('the texts', () => {
  it('says sizes 1024-based and whole bytes below a KiB', () => {
    expect(sizeText(0)).toBe('0 B');
    expect(sizeText(1023)).toBe('1023 B');
    expect(sizeText(1024)).toBe('1.0 KiB');
    expect(sizeText(1.2 * 1024 * 1024)).toBe('1.2 MiB');
    expect(sizeText(3 * 1024 ** 3)).toBe('3.0 GiB');
    expect(sizeText(2048 * 1024 ** 4)).toBe('2048.0 TiB');
  });

  it('says seconds with two decimals below one, one above', () => {
    expect(secondsText(0.25)).toBe('0.25 s');
    expect(secondsText(12.08)).toBe('12.1 s');
    expect(secondsText(75)).toBe('75.0 s');
  });

  it("says a stage's tasks and only its figures that are not zero", () => {
    const [done, skewed] = inside().stages;
    expect(stageTasksText(done)).toBe('8/8');
    expect(stageTasksText(skewed)).toBe('150/200 (2 running), 1 failed');
    expect(stageTasksText(stageRow({ status: 'failed', failed: 4 }))).toBe(
      '8/8, 4 failed · failed'
    );
    expect(stageFiguresText(done)).toBe(
      'input 1.2 MiB · shuffle write 3.0 MiB · slowest task 0.40 s, median 0.25 s'
    );
    expect(stageFiguresText(skewed)).toBe(
      'shuffle read 3.0 MiB · spill 512 B disk · slowest task 9.8 s, median 0.10 s'
    );
    const bare = stageRow({
      input_bytes: 0,
      shuffle_write_bytes: 0,
      memory_spilled_bytes: 2048,
      disk_spilled_bytes: 1024,
      median_task_seconds: null,
      max_task_seconds: null
    });
    expect(stageFiguresText(bare)).toBe('spill 2.0 KiB memory, 1.0 KiB disk');
    expect(
      stageFiguresText(
        stageRow({
          input_bytes: 0,
          shuffle_write_bytes: 0,
          median_task_seconds: null,
          max_task_seconds: null
        })
      )
    ).toBe('');
  });

  it('says which stages are not shown, and why, in the parts that are not zero', () => {
    expect(hiddenStagesText(inside())).toBe(
      '2 more stages not shown · 1 skipped (their output was there already)'
    );
    expect(
      hiddenStagesText(
        inside({ more_stages: 0, skipped_stages: 0, unknown_stages: 1200 })
      )
    ).toBe(
      '1,200 gone before the board read them (Spark keeps a bounded number of ended stages)'
    );
    expect(
      hiddenStagesText(inside({ more_stages: 0, skipped_stages: 0 }))
    ).toBe('');
  });

  it('sums it up as the stages that ran and the findings', () => {
    // 2 rows, 2 not shown; the skipped one did not run.
    expect(insideSummaryText(inside())).toBe('4 stages · 1 finding');
    expect(
      insideSummaryText(inside({ more_stages: 0, stages: [stageRow()] }))
    ).toBe('1 stage · 1 finding');
    expect(insideSummaryText(inside({ findings: [] }))).toBe('4 stages');
    const chartOnly = inside({
      stages: [],
      more_stages: 0,
      skipped_stages: 0,
      findings: []
    });
    expect(insideSummaryText(chartOnly)).toBe('slot chart');
    expect(isEmptyInside(chartOnly)).toBe(false);
    expect(isEmptyInside({ ...chartOnly, chart: null })).toBe(true);
  });
});

describe('the stage rows', () => {
  it('shows a row per stage: id, code, tasks, time, figures', () => {
    const box = renderInside(inside());
    const rows = q(box, 'jss-stage-row') as HTMLElement[];
    expect(rows.map(r => [r.dataset.stage, r.dataset.status])).toEqual([
      ['3', 'complete'],
      ['4', 'active']
    ]);
    expect(cells(rows[1])).toEqual([
      '4',
      'count at In [12] line 1',
      '150/200 (2 running), 1 failed',
      '12.1 s',
      'shuffle read 3.0 MiB · spill 512 B disk · slowest task 9.8 s, median 0.10 s'
    ]);
    // The code is cut with an ellipsis by its style: whole on hover.
    const code = rows[1].querySelector('.jp-SparkInside-codeText')!;
    expect(code.getAttribute('title')).toBe('count at In [12] line 1');
    expect(
      Array.from(box.querySelectorAll('th')).map(th => th.textContent)
    ).toEqual(['stage', 'code', 'tasks', 'time', 'figures']);
  });

  it('says a retried stage and writes every text as text', () => {
    const box = renderInside(
      inside({
        stages: [stageRow({ attempt: 1, name: '<img src=x onerror=alert(1)>' })]
      })
    );
    const [row] = q(box, 'jss-stage-row');
    expect(cells(row)[0]).toBe('3 (attempt 2)');
    expect(cells(row)[1]).toBe('<img src=x onerror=alert(1)>');
    expect(box.querySelector('img')).toBeNull();
  });

  it('shows the hidden stages under the rows, and the findings marked', () => {
    const box = renderInside(inside());
    const [hidden] = q(box, 'jss-hidden-stages');
    expect(hidden.textContent).toBe(
      '2 more stages not shown · 1 skipped (their output was there already)'
    );
    expect(hidden.previousElementSibling?.tagName).toBe('TABLE');
    const findings = q(box, 'jss-finding');
    expect(findings).toHaveLength(1);
    expect(findings[0].textContent).toMatch(
      /^⚠ stage 4 \(count at In \[12\] line 1\): its slowest task of 200 ran 9\.8 s/
    );
    expect(findings[0].classList).toContain('jp-SparkInside-finding');
  });

  it('leaves out what is not there', () => {
    const box = renderInside(
      inside({
        stages: [],
        more_stages: 0,
        skipped_stages: 0,
        chart: null,
        findings: []
      })
    );
    expect(box.children).toHaveLength(0);
  });
});

describe('the slot chart', () => {
  it('draws a lane per executor: its running tasks against its slots', () => {
    const box = renderInside(inside());
    const [svg] = q(box, 'jss-slot-chart');
    expect(svg.namespaceURI).toBe('http://www.w3.org/2000/svg');
    expect(svg.getAttribute('viewBox')).toBe('0 0 480 50');
    expect(svg.querySelector('title')?.textContent).toBe(
      'Running tasks per executor against its task slots over 10.0 s; orange ticks: stage starts'
    );
    const lanes = q(svg, 'jss-slot-lane') as SVGElement[];
    expect(lanes.map(l => l.dataset.executor)).toEqual(['1', '2']);
    expect(lanes.map(l => l.querySelector('text')?.textContent ?? '')).toEqual([
      '1: 2 slots',
      '2: 4 slots'
    ]);

    // Executor 1: full (its slots are the lane's top) from its first sample
    // (2 s in) until the last one, idle from there: each sample holds until the
    // next.
    const full = lanes[0];
    expect(full.querySelector('polygon')?.getAttribute('points')).toBe(
      '80,26 80,10 200,10 200,10 400,10 400,26 400,26 400,26'
    );
    const fullSlots = full.querySelector('rect')!;
    expect(fullSlots.getAttribute('y')).toBe('10');
    expect(fullSlots.getAttribute('height')).toBe('16');

    // Executor 2 ran 6 tasks on 4 slots once: the lane goes to 6, its slots
    // box to 4/6 of it.
    const over = lanes[1];
    const overSlots = over.querySelector('rect')!;
    expect(overSlots.getAttribute('height')).toBe('10.7');
    expect(overSlots.getAttribute('y')).toBe('35.3');
    expect(overSlots.getAttribute('class')).toBe('jp-SparkInside-slots');
    const points = over.querySelector('polygon')!.getAttribute('points')!;
    expect(points.split(' ')[3]).toBe('200,30'); // its peak from 5 s: the lane's top
  });

  it('puts an orange tick at each stage start, one id for stages started together', () => {
    const [svg] = q(renderInside(inside()), 'jss-slot-chart');
    const marks = q(svg, 'jss-stage-mark') as SVGElement[];
    expect(marks.map(m => m.dataset.stage)).toEqual(['3', '4', '5']);
    expect(marks.map(m => m.querySelector('line')?.getAttribute('x1'))).toEqual(
      ['0', '4', '200']
    );
    expect(marks.map(m => m.querySelector('text')?.textContent ?? '')).toEqual([
      '3',
      '',
      '5'
    ]);
    expect(marks[2].querySelector('line')?.getAttribute('class')).toBe(
      'jp-SparkInside-tick'
    );
  });

  it("fits the sidebar's width, and draws no slots it does not know", () => {
    const box = renderSlotChart(
      slotChart({ start: null, end: null, slots: [0, 4] }),
      240
    )!;
    const svg = box.querySelector('svg')!;
    expect(svg.getAttribute('viewBox')).toBe('0 0 240 50');
    const [unknown, known] = q(svg, 'jss-slot-lane');
    expect(unknown.querySelector('rect')).toBeNull();
    expect(unknown.querySelector('text')?.textContent).toBe('1: slots unknown');
    expect(known.querySelector('rect')).not.toBeNull();
    // Without its times: from the first sample to the last.
    expect(svg.querySelector('title')?.textContent).toContain('over 8.0 s');
  });

  it('draws at most MAX_LANES lanes, and says how many it left out', () => {
    const executors = Array.from({ length: MAX_LANES + 4 }, (_, i) => `${i}`);
    const box = renderSlotChart(
      slotChart({
        executors,
        slots: executors.map(() => 1),
        samples: [[1005, executors.map(() => 1)]]
      }),
      480
    )!;
    expect(q(box, 'jss-slot-lane')).toHaveLength(MAX_LANES);
    expect(q(box, 'jss-lanes-not-drawn')[0].textContent).toBe(
      '4 more executors not drawn'
    );
  });

  it('draws nothing without a time', () => {
    expect(
      renderSlotChart(
        slotChart({ start: null, end: null, samples: [], stage_marks: [] }),
        480
      )
    ).toBeNull();
  });
});
