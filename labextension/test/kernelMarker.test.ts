import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { pageShowsNotebooks } from '../src/appPage';
import { MARKER_TEXT, hasSparkSessionsMarker } from '../src/kernelMarker';
import { LOADED_KERNEL_INFO, PLAIN_KERNEL_INFO } from './fakes';

describe('hasSparkSessionsMarker', () => {
  it("finds the extension's help link in a kernel_info reply", () => {
    expect(hasSparkSessionsMarker(LOADED_KERNEL_INFO)).toBe(true);
  });

  it('looks for the text the kernel side lists', () => {
    const python = readFileSync(
      new URL('../../jupyter_spark_sessions/kernel/marker.py', import.meta.url),
      'utf8'
    );
    expect(python).toMatch(/^MARKER_TEXT = "(.*)"$/m);
    expect(python.match(/^MARKER_TEXT = "(.*)"$/m)?.[1]).toBe(MARKER_TEXT);
  });

  it('says no for a kernel without it, and for anything malformed', () => {
    expect(hasSparkSessionsMarker(PLAIN_KERNEL_INFO)).toBe(false);
    expect(hasSparkSessionsMarker({ status: 'ok' })).toBe(false);
    expect(hasSparkSessionsMarker({ help_links: 'Spark sessions' })).toBe(
      false
    );
    expect(hasSparkSessionsMarker({ help_links: [null, 3] })).toBe(false);
    expect(hasSparkSessionsMarker(null)).toBe(false);
    expect(hasSparkSessionsMarker(undefined)).toBe(false);
  });
});

describe('pageShowsNotebooks', () => {
  it("is true in JupyterLab and Notebook 7's notebook page only", () => {
    expect(pageShowsNotebooks('')).toBe(true); // JupyterLab
    expect(pageShowsNotebooks('notebooks')).toBe(true);
    for (const page of ['tree', 'edit', 'consoles', 'terminals']) {
      expect(pageShowsNotebooks(page)).toBe(false);
    }
  });
});
