/**
 * The rules of adding a file to a session, as the kernel applies them: which
 * kind a file name implies, the name it gets in the session, the alias worth
 * sending, and what to tell the user about the kernel's answer.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */
import { replyErrorMessage } from './format';
import type { AddKind, AddReply, Reply } from './protocol';

/** The extensions shipped as archives (unpacked on the executors). */
const ARCHIVE_SUFFIXES = ['.zip', '.jar', '.tar', '.tar.gz', '.tgz'];
/** The extensions added to the Python path. */
const PYFILE_SUFFIXES = ['.py', '.egg'];

/**
 * The kind an `add` uses for a file name: archives (`.zip`, `.jar`, `.tar`,
 * `.tar.gz`, `.tgz`), Python files (`.py`, `.egg`), else a plain file.
 */
export function inferAddKind(fileName: string): AddKind {
  const name = fileName.toLowerCase();
  if (ARCHIVE_SUFFIXES.some(suffix => name.endsWith(suffix))) {
    return 'archive';
  }
  if (PYFILE_SUFFIXES.some(suffix => name.endsWith(suffix))) {
    return 'pyfile';
  }
  return 'file';
}

/**
 * The name a file gets in a session when no alias is given, as the kernel
 * chooses it: an archive's folder is its name without the archive suffix
 * (`lookup.tar.gz` -> `lookup`); anything else keeps its name.
 */
export function defaultNameInSession(fileName: string, kind: AddKind): string {
  if (kind !== 'archive') {
    return fileName;
  }
  const lower = fileName.toLowerCase();
  // Longest first: `.tar.gz` before a shorter suffix could match.
  const suffix = [...ARCHIVE_SUFFIXES]
    .sort((a, b) => b.length - a.length)
    .find(s => lower.endsWith(s));
  return suffix ? fileName.slice(0, -suffix.length) : fileName;
}

/**
 * The alias to send for what the user typed: none when the field is empty,
 * equals the default name, or the kind takes no alias (Python files).
 */
export function aliasToSend(
  typed: string,
  fileName: string,
  kind: AddKind
): string | undefined {
  const alias = typed.trim();
  if (kind === 'pyfile' || !alias) {
    return undefined;
  }
  return alias === defaultNameInSession(fileName, kind) ? undefined : alias;
}

/** What to tell the user about an `add` reply. */
export type AddOutcome = {
  level: 'success' | 'info' | 'error';
  message: string;
};

/**
 * The message of an `add` reply for `fileName` and `session`: success,
 * info when the same content was already there (`added: false`), or error.
 */
export function addOutcome(
  reply: Reply,
  fileName: string,
  session: string
): AddOutcome {
  if (reply.status === 'error') {
    return { level: 'error', message: replyErrorMessage(reply) };
  }
  const answer = reply as Partial<AddReply>; // the answer to an `add`
  const name = answer.artifact?.name || fileName;
  if (answer.added === false) {
    return {
      level: 'info',
      message: `'${name}' is already in session '${session}' with the same content.`
    };
  }
  const kind = answer.artifact?.kind ?? 'file';
  const renamed = name === fileName ? '' : ` as '${name}'`;
  return {
    level: 'success',
    message: `Added ${kind} '${fileName}' to session '${session}'${renamed}.`
  };
}
