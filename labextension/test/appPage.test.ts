import { describe, expect, it } from 'vitest';

import {
  SIDEBAR_OPEN_KEY,
  TOGGLE_PANEL_COMMAND,
  rememberSidebarOpen,
  reopenSidebar,
  showItemHidSidebar
} from '../src/appPage';

class MemoryStorage {
  items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
}

describe('the sidebar across Notebook 7 pages (issue 28, 9)', () => {
  it('opens again on a notebook page when it was left open', () => {
    const storage = new MemoryStorage();
    expect(reopenSidebar(storage, 'notebooks')).toBe(false);
    rememberSidebarOpen(storage, true);
    expect(storage.getItem(SIDEBAR_OPEN_KEY)).toBe('true');
    expect(reopenSidebar(storage, 'notebooks')).toBe(true);
    rememberSidebarOpen(storage, false);
    expect(reopenSidebar(storage, 'notebooks')).toBe(false);
  });

  it('leaves JupyterLab its own layout, and survives a refused storage', () => {
    const storage = new MemoryStorage();
    rememberSidebarOpen(storage, true);
    expect(reopenSidebar(storage, '')).toBe(false);
    const refusing = {
      getItem: () => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('denied');
      }
    };
    expect(() => rememberSidebarOpen(refusing, true)).not.toThrow();
    expect(reopenSidebar(refusing, 'notebooks')).toBe(false);
    expect(reopenSidebar(null, 'notebooks')).toBe(false);
  });
});

describe('Notebook 7\'s "Show Spark Sessions" (issue 39, 5)', () => {
  const show = {
    id: TOGGLE_PANEL_COMMAND,
    args: { side: 'right', title: 'Show Spark Sessions', id: 'sidebar' }
  };

  it('is undone when it hid the open sidebar: "Show" only shows', () => {
    expect(showItemHidSidebar(show, 'sidebar', false)).toBe(true);
    expect(showItemHidSidebar(show, 'sidebar', true)).toBe(false);
  });

  it("leaves other panels' items and other commands alone", () => {
    const other = { ...show, args: { ...show.args, id: 'toc' } };
    expect(showItemHidSidebar(other, 'sidebar', false)).toBe(false);
    expect(
      showItemHidSidebar({ id: 'other', args: show.args }, 'sidebar', false)
    ).toBe(false);
  });
});
