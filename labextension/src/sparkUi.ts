/**
 * Links to Spark's own UI, through the Jupyter server: the project's server
 * extension serves the driver's UI port at `{baseUrl}spark-sessions/ui/{port}/`,
 * behind Jupyter's authentication, adding the UI's secret for a context the
 * project started (whose UI refuses any other request), so the links work
 * when the browser cannot reach the driver's port (a remote JupyterHub). Not
 * jupyter-server-proxy's `proxy/{port}/`: Spark's page scripts take the path
 * segment after `proxy` for the application id (the Environment, Executors
 * and SQL tabs never loaded). The driver runs in the kernel, on the server's
 * machine: only the port of the session's `ui_url` matters.
 *
 * Pure TypeScript: no JupyterLab imports, so that it can be unit-tested in Node.
 */

/** The port of a Spark UI address, or null when there is none (UI off). */
export function sparkUiPort(uiUrl: string): number | null {
  if (!uiUrl) {
    return null;
  }
  let url: URL;
  try {
    url = new URL(uiUrl);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return null;
  }
  // URL drops a scheme's default port: Spark's UI always names its own.
  const port = url.port
    ? Number(url.port)
    : url.protocol === 'https:'
      ? 443
      : 80;
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : null;
}

/** The server extension's route to a Spark UI port (server/spark_ui_route.py). */
export const SPARK_UI_ROUTE = 'spark-sessions/ui';

function proxied(baseUrl: string, uiUrl: string, path: string): string | null {
  const port = sparkUiPort(uiUrl);
  if (port === null) {
    return null;
  }
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  return `${base}${SPARK_UI_ROUTE}/${port}/${path}`;
}

/** The Spark UI's job list of a session, or null without a UI. */
export function sparkJobsUrl(baseUrl: string, uiUrl: string): string | null {
  return proxied(baseUrl, uiUrl, 'jobs/');
}

/**
 * A page of the Spark UI (`page`: a path under it, as a Connect session's
 * `operations_page`), or null without a UI or page.
 */
export function sparkPageUrl(
  baseUrl: string,
  uiUrl: string,
  page: string
): string | null {
  return page ? proxied(baseUrl, uiUrl, page.replace(/^\/+/, '')) : null;
}

/** The Spark UI's page of one job, or null without a UI. */
export function sparkJobUrl(
  baseUrl: string,
  uiUrl: string,
  jobId: number
): string | null {
  if (!Number.isInteger(jobId) || jobId < 0) {
    return null;
  }
  return proxied(baseUrl, uiUrl, `jobs/job/?id=${jobId}`);
}
