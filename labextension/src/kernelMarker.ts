/**
 * How the sidebar tells, at once, whether a kernel has loaded
 * jupyter_spark_sessions: the extension lists a help link in the kernel's
 * standard kernel_info reply (jupyter_spark_sessions/kernel/marker.py), which
 * ipykernel answers on the control channel even while a cell runs. Asking
 * this first means a kernel without the extension is never sent a message
 * type it does not know.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */

/** The help link's text the kernel lists while the extension is loaded. */
export const MARKER_TEXT = 'Spark sessions';

/** Whether a kernel_info reply's content carries the extension's help link. */
export function hasSparkSessionsMarker(kernelInfo: unknown): boolean {
  if (typeof kernelInfo !== 'object' || kernelInfo === null) {
    return false;
  }
  const links = (kernelInfo as { help_links?: unknown }).help_links;
  return (
    Array.isArray(links) &&
    links.some(
      link =>
        typeof link === 'object' &&
        link !== null &&
        (link as { text?: unknown }).text === MARKER_TEXT
    )
  );
}
