package jss;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.apache.spark.SparkContext;
import org.apache.spark.ui.SparkUI;
import scala.Option;

/**
 * Makes the root of a context's Spark UI redirect to its jobs page with a relative
 * address. Spark's own root handler answers with an absolute URL built from the
 * request, which leaves a path-prefixing proxy: through the Jupyter server's
 * {@code {base_url}proxy/<port>/} (jupyter-server-proxy), a click on the UI's logo
 * landed on the Jupyter server's {@code /jobs/}, a page that does not exist. Every other
 * page already follows the proxy's {@code X-Forwarded-Context} header.
 *
 * <p>Made for contexts this project starts (jupyter_spark_sessions/backends/context_start.py,
 * {@code start_context}); a context without a UI is left alone. Uses
 * {@code SparkContext.ui()} (private[spark], public in bytecode) and
 * {@code WebUI.detachHandler}/{@code attachHandler}.
 */
public final class UiRootRedirect {
    public UiRootRedirect(SparkContext context) {
        Option<SparkUI> ui = context.ui();
        if (ui.isEmpty()) {
            return;
        }
        ui.get().detachHandler("/");
        ui.get().attachHandler("/", new RelativeRedirect(), "");
    }

    /** {@code 302 Location: jobs/}, relative to where the browser is. */
    private static final class RelativeRedirect extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) {
            // From /a/b the jobs page is ../jobs/; from / (the usual case) jobs/.
            String path = request.getRequestURI();
            int depth = 0;
            for (int i = 1; i < path.length(); i++) {
                if (path.charAt(i) == '/') {
                    depth++;
                }
            }
            response.setStatus(HttpServletResponse.SC_FOUND);
            // setHeader, not sendRedirect: Jetty would make the address absolute again.
            response.setHeader("Location", "../".repeat(depth) + "jobs/");
        }
    }
}
