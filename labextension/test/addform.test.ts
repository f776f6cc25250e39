// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';

import { AddFileForm } from '../src/addform';

function control<T extends HTMLElement>(form: AddFileForm, testid: string): T {
  const found = form.node.querySelector(`[data-testid="${testid}"]`);
  if (found === null) {
    throw new Error(`no ${testid}`);
  }
  return found as T;
}

function choose(select: HTMLSelectElement, value: string): void {
  select.value = value;
  select.dispatchEvent(new Event('change'));
}

describe('AddFileForm', () => {
  it('offers the sessions, infers the kind and shows the default name', () => {
    const form = new AddFileForm(['a', 'b'], ['deps.tar.gz']);
    const sessions = control<HTMLSelectElement>(form, 'jss-add-session');
    expect(Array.from(sessions.options).map(o => o.value)).toEqual(['a', 'b']);
    expect(control<HTMLSelectElement>(form, 'jss-add-kind').value).toBe(
      'archive'
    );
    expect(control<HTMLInputElement>(form, 'jss-add-alias').placeholder).toBe(
      'deps'
    );
    expect(form.getValue()).toEqual({
      session: 'a',
      kind: 'archive',
      alias: undefined
    });
  });

  it('returns the chosen session, kind and typed name', () => {
    const form = new AddFileForm(['a', 'b'], ['lookup_v2.csv']);
    choose(control<HTMLSelectElement>(form, 'jss-add-session'), 'b');
    control<HTMLInputElement>(form, 'jss-add-alias').value = 'lookup.csv';
    expect(form.getValue()).toEqual({
      session: 'b',
      kind: 'file',
      alias: 'lookup.csv'
    });
  });

  it('adds a zip as a Python file without an alias when asked', () => {
    const form = new AddFileForm(['a'], ['pkg.zip']);
    const alias = control<HTMLInputElement>(form, 'jss-add-alias');
    alias.value = 'typed-before';
    choose(control<HTMLSelectElement>(form, 'jss-add-kind'), 'pyfile');
    expect(alias.disabled).toBe(true);
    expect(form.getValue()).toEqual({
      session: 'a',
      kind: 'pyfile',
      alias: undefined
    });
  });

  it('asks only for the session when several files are added', () => {
    const form = new AddFileForm(['a'], ['x.csv', 'y.zip']);
    expect(form.node.querySelector('[data-testid="jss-add-kind"]')).toBeNull();
    expect(form.node.querySelector('[data-testid="jss-add-alias"]')).toBeNull();
    expect(form.getValue()).toEqual({ session: 'a' });
  });
});
