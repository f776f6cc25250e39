/**
 * Which pages of which app get the sidebar.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */

/**
 * Whether a page can show a notebook, from the page config's `notebookPage`.
 * Notebook 7 serves each view as its own page ('tree', 'notebooks', 'edit',
 * 'consoles', 'terminals'): only 'notebooks' ever has a notebook to follow or
 * to add files to. JupyterLab sets no such option ('').
 */
export function pageShowsNotebooks(notebookPage: string): boolean {
  return notebookPage === '' || notebookPage === 'notebooks';
}
