/**
 * Paths between the file browser (relative to the server root) and the kernel
 * (whose working directory is the notebook's directory).
 */
import { PathExt } from '@jupyterlab/coreutils';

/**
 * The path of a file browser item as the notebook's kernel sees it: relative
 * to the notebook's directory. Both paths are local (no drive prefix) and
 * relative to the server root (a leading slash is dropped: both are).
 */
export function kernelRelativePath(
  notebookPath: string,
  fileBrowserPath: string
): string {
  const notebookDir = PathExt.dirname(PathExt.removeSlash(notebookPath));
  return PathExt.relative(notebookDir, PathExt.removeSlash(fileBrowserPath));
}
