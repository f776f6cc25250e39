// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from 'vitest';

import { CELL_QUERY_MIME, CellQueryRenderer } from '../src/cellQuery';
import type { CellQuery } from '../src/protocol';
import { FakeKernel } from './fakes';
import { query } from './fixtures';

function model(data: CellQuery): any {
  return { data: { [CELL_QUERY_MIME]: data }, metadata: {}, trusted: true };
}

function running(): CellQuery {
  return {
    version: 1,
    final: false,
    summary: "streaming query 'rates' of session etl active · batch 81",
    query: query()
  };
}

async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await Promise.resolve();
  }
}

let renderer: CellQueryRenderer | null = null;
afterEach(() => {
  renderer?.dispose();
  renderer = null;
});

describe("a streaming query's view under its cell", () => {
  it('shows its figures and chart, and a Stop that asks on the control channel', async () => {
    const kernel = new FakeKernel();
    renderer = new CellQueryRenderer(() => kernel as any);
    await renderer.renderModel(model(running()));
    const node = renderer.node;
    expect(node.dataset.state).toBe('active');
    expect(node.dataset.query).toBe('rates');
    expect(node.textContent).toContain('batch 81');
    expect(node.textContent).not.toContain('started by'); // this very cell
    expect(node.querySelector('[data-testid="jss-query-sparkline"]')).not.toBe(
      null
    );
    const stop = node.querySelector(
      '[data-testid="spark-cell-stop-query"]'
    ) as HTMLButtonElement;
    expect(stop.disabled).toBe(false);
    stop.click();
    await flush();
    expect(kernel.futures).toHaveLength(1);
    const sent = kernel.futures[0].msg;
    expect(sent.channel).toBe('control');
    expect(sent.content).toMatchObject({
      action: 'stop_query',
      query: query().run_id,
      source: 'cell'
    });
    // Stopping from the click until the kernel says the query ended.
    expect(renderer.state).toBe('stopping');
    const pending = node.querySelector(
      '[data-testid="spark-cell-stop-query"]'
    ) as HTMLButtonElement;
    expect(pending.disabled).toBe(true);
    expect(pending.textContent).toBe('Stopping…');
  });

  it('ends in its summary line', async () => {
    renderer = new CellQueryRenderer(() => null);
    const summary =
      "streaming query 'rates' of session etl stopped (from its view) after 12 s · 82 batches";
    await renderer.renderModel(
      model({
        version: 1,
        final: true,
        summary,
        query: query({ state: 'stopped', ended_at: 1002 })
      })
    );
    expect(renderer.node.textContent).toBe(summary);
    expect(renderer.node.querySelector('button')).toBe(null);
  });

  it('says in one line that there is no kernel to ask', async () => {
    renderer = new CellQueryRenderer(() => null);
    await renderer.renderModel(model(running()));
    (
      renderer.node.querySelector(
        '[data-testid="spark-cell-stop-query"]'
      ) as HTMLButtonElement
    ).click();
    await flush();
    expect(
      renderer.node.querySelector('[data-testid="spark-cell-query-error"]')
        ?.textContent
    ).toBe('This notebook has no kernel to ask.');
    expect(renderer.state).toBe('active');
  });
});
