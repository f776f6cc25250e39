import { describe, expect, it } from 'vitest';

import { kernelRelativePath } from '../src/paths';

describe('kernelRelativePath', () => {
  it('is relative to the notebook directory', () => {
    expect(kernelRelativePath('nb.ipynb', 'lookup.csv')).toBe('lookup.csv');
    expect(kernelRelativePath('nb.ipynb', 'data/lookup.csv')).toBe(
      'data/lookup.csv'
    );
    expect(kernelRelativePath('work/nb.ipynb', 'work/data/x.csv')).toBe(
      'data/x.csv'
    );
    expect(kernelRelativePath('work/sub/nb.ipynb', 'other/x.csv')).toBe(
      '../../other/x.csv'
    );
    expect(kernelRelativePath('/work/nb.ipynb', '/x.csv')).toBe('../x.csv');
  });
});
