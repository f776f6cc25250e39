import { describe, expect, it } from 'vitest';

import { KernelFollower } from '../src/kernelFollower';
import { SidebarModel } from '../src/model';
import { FakeKernel, FakePanel, FakeTracker } from './fakes';

describe('KernelFollower', () => {
  it("follows the current notebook's kernel into the model", () => {
    const tracker = new FakeTracker();
    const model = new SidebarModel();
    const follower = new KernelFollower(tracker as any, model);
    expect(model.status).toBe('no-kernel');
    expect(follower.connection).toBeNull();
    expect(follower.notebookPath).toBeUndefined();

    const kernel = new FakeKernel();
    tracker.setCurrent(new FakePanel(kernel, 'work/etl.ipynb'));
    expect(model.status).toBe('connecting');
    expect(model.notebookName).toBe('etl.ipynb');
    expect(follower.notebookPath).toBe('work/etl.ipynb');
    expect(follower.connection?.kernel).toBe(kernel);
    follower.dispose();
  });

  it('stops following when disposed: its connection is closed', () => {
    const tracker = new FakeTracker();
    const model = new SidebarModel();
    const follower = new KernelFollower(tracker as any, model);
    const panel = new FakePanel(new FakeKernel(), 'a.ipynb');
    tracker.setCurrent(panel);
    const connection = follower.connection!;
    follower.dispose();
    expect(follower.isDisposed).toBe(true);
    expect(connection.isDisposed).toBe(true);
    expect(follower.connection).toBeNull();
    expect(tracker.currentChanged.slots).toHaveLength(0);
    expect(panel.sessionContext.statusChanged.slots).toHaveLength(0);
    tracker.setCurrent(null);
    expect(model.status).toBe('connecting'); // no longer followed
  });
});
