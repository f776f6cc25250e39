// @vitest-environment happy-dom
import { describe, expect, it, vi } from 'vitest';

import {
  ISharedDriverState,
  idleLine,
  renderSharedDriver,
  serverLine,
  sharedDriverJobsUrl,
  workLine
} from '../src/sharedDriver';

const STATE: ISharedDriverState = {
  server: {
    id: 'abc',
    master: 'local[2]',
    slots: 2,
    memory_bytes: 450 * 2 ** 20,
    uptime_s: 185,
    ui_path: 'spark-sessions/ui/4050/'
  },
  notebooks: [
    {
      notebook: 'one.ipynb',
      kernel_id: 'k1',
      this_server: true,
      sessions: [
        { name: 'a', running_jobs: 1, active_tasks: 1, slot_share: 0.5 }
      ]
    },
    {
      notebook: 'two.ipynb',
      kernel_id: 'k2',
      this_server: false,
      sessions: [
        { name: 'b', running_jobs: 2, active_tasks: 1, slot_share: 0.5 },
        { name: 'c', running_jobs: 0, active_tasks: 0, slot_share: 0 }
      ]
    }
  ]
};

function rows(root: HTMLElement, testid: string): HTMLElement[] {
  return Array.from(root.querySelectorAll(`[data-testid="${testid}"]`));
}

describe('the shared driver section', () => {
  it('says the server in one line: master, slots, memory, uptime', () => {
    expect(serverLine(STATE.server!)).toBe(
      'local[2] · 2 slots · 450 MB · up 3 min'
    );
    expect(
      serverLine({
        ...STATE.server!,
        slots: null,
        memory_bytes: null,
        uptime_s: 7300
      })
    ).toBe('local[2] · up 2 h 1 min');
  });

  it('says a warm server with no notebook is idle and when it stops', () => {
    const root = document.createElement('div');
    const context = { baseUrl: '/', currentKernelId: '', cancel: vi.fn() };
    const warm = { ...STATE.server!, idle_stop_s: 600 };
    renderSharedDriver(root, { server: warm, notebooks: [] }, context);
    expect(rows(root, 'jss-shared-idle').map(row => row.textContent)).toEqual([
      'Warm and idle: no notebook has a session on it yet; it stops after 10 min without one.'
    ]);
    expect(idleLine({ ...warm, idle_stop_s: null })).toBe(
      'Warm and idle: no notebook has a session on it yet.'
    );
    renderSharedDriver(root, STATE, context);
    expect(rows(root, 'jss-shared-idle')).toEqual([]);
  });

  it("says each session's work and share of the slots", () => {
    expect(workLine(STATE.notebooks[0].sessions[0])).toBe(
      '1 job · 50% of slots'
    );
    expect(workLine(STATE.notebooks[1].sessions[0])).toBe(
      '2 jobs · 50% of slots'
    );
    expect(workLine(STATE.notebooks[1].sessions[1])).toBe('idle');
    expect(
      workLine({
        name: 'x',
        running_jobs: null,
        active_tasks: 0,
        slot_share: null
      })
    ).toBe('');
  });

  it("lists every notebook's sessions, marks this one, links the UI, cancels through its kernel", () => {
    const root = document.createElement('div');
    const cancel = vi.fn();
    renderSharedDriver(root, STATE, {
      baseUrl: '/user/ana/',
      currentKernelId: 'k1',
      cancel
    });
    const notebooks = rows(root, 'jss-shared-notebook');
    expect(notebooks.map(n => n.dataset.notebook)).toEqual([
      'one.ipynb',
      'two.ipynb'
    ]);
    expect(notebooks[0].textContent).toContain('one.ipynb (this notebook)');
    expect(notebooks[1].textContent).not.toContain('(this notebook)');
    // Its job list, as a session's link: not the UI's root (issue 47, 4).
    const [link] = rows(root, 'jss-shared-ui-link') as HTMLAnchorElement[];
    expect(link.getAttribute('href')).toBe(
      '/user/ana/spark-sessions/ui/4050/jobs/'
    );
    expect(link.target).toBe('_blank');
    expect(sharedDriverJobsUrl('/base', '/spark-sessions/ui/1/')).toBe(
      '/base/spark-sessions/ui/1/jobs/'
    );
    const buttons = rows(root, 'jss-shared-cancel') as HTMLButtonElement[];
    expect(buttons.map(b => b.disabled)).toEqual([false, true, true]);
    buttons[0].click();
    expect(cancel).toHaveBeenCalledWith('k1', 'a');
    expect(buttons[0].disabled).toBe(true);
  });

  it('shows nothing when no shared server runs', () => {
    const root = document.createElement('div');
    root.textContent = 'old';
    renderSharedDriver(
      root,
      { server: null, notebooks: [] },
      {
        baseUrl: '/',
        currentKernelId: '',
        cancel: () => undefined
      }
    );
    expect(root.textContent).toBe('');
  });
});
