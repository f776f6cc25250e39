import { describe, expect, it } from 'vitest';

import {
  addOutcome,
  aliasToSend,
  defaultNameInSession,
  inferAddKind
} from '../src/addNaming';

describe('inferAddKind', () => {
  it.each([
    ['deps.zip', 'archive'],
    ['lib.jar', 'archive'],
    ['data.tar', 'archive'],
    ['data.tar.gz', 'archive'],
    ['DATA.TGZ', 'archive'],
    ['helpers.py', 'pyfile'],
    ['pkg-1.0.egg', 'pyfile'],
    ['lookup.csv', 'file'],
    ['notes.gz', 'file'],
    ['README', 'file'],
    ['script.pyc', 'file']
  ])('%s -> %s', (name, kind) => {
    expect(inferAddKind(name)).toBe(kind);
  });
});

describe('defaultNameInSession', () => {
  it.each([
    ['lookup.csv', 'file', 'lookup.csv'],
    ['lookup.tar.gz', 'archive', 'lookup'],
    ['My Data.TGZ', 'archive', 'My Data'],
    ['deps.zip', 'archive', 'deps'],
    ['deps.zip', 'file', 'deps.zip'],
    ['helpers.py', 'pyfile', 'helpers.py']
  ] as const)('%s as %s -> %s', (name, kind, expected) => {
    expect(defaultNameInSession(name, kind)).toBe(expected);
  });
});

describe('aliasToSend', () => {
  it('sends what was typed, trimmed', () => {
    expect(aliasToSend(' lookup.csv ', 'lookup_v2.csv', 'file')).toBe(
      'lookup.csv'
    );
  });
  it('sends nothing for an empty field or the default name', () => {
    expect(aliasToSend('  ', 'lookup.csv', 'file')).toBeUndefined();
    expect(aliasToSend('lookup.csv', 'lookup.csv', 'file')).toBeUndefined();
    expect(aliasToSend('deps', 'deps.zip', 'archive')).toBeUndefined();
  });
  it('never sends one for a Python file', () => {
    expect(aliasToSend('other.py', 'helpers.py', 'pyfile')).toBeUndefined();
  });
});

describe('add replies', () => {
  it('turns replies into messages', () => {
    const artifact = {
      name: 'lookup.csv',
      kind: 'file' as const,
      size: 1,
      path: '/d/lookup.csv'
    };
    const base = {
      version: 1 as const,
      request_id: 'r',
      action: 'add' as const,
      status: 'ok' as const
    };
    expect(
      addOutcome({ ...base, added: true, artifact }, 'lookup.csv', 'a')
    ).toEqual({
      level: 'success',
      message: "Added file 'lookup.csv' to session 'a'."
    });
    expect(
      addOutcome({ ...base, added: true, artifact }, 'lookup_v2.csv', 'a')
    ).toEqual({
      level: 'success',
      message: "Added file 'lookup_v2.csv' to session 'a' as 'lookup.csv'."
    });
    expect(
      addOutcome({ ...base, added: false, artifact }, 'lookup.csv', 'a')
    ).toEqual({
      level: 'info',
      message: "'lookup.csv' is already in session 'a' with the same content."
    });
    expect(
      addOutcome(
        {
          version: 1,
          request_id: 'r',
          status: 'error',
          error: { code: 'failed', message: 'No such file:\n x.csv' }
        },
        'x.csv',
        'a'
      )
    ).toEqual({ level: 'error', message: 'No such file: x.csv' });
  });
});
