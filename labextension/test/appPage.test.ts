import { describe, expect, it } from 'vitest';

import {
  SIDEBAR_OPEN_KEY,
  rememberSidebarOpen,
  reopenSidebar
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
