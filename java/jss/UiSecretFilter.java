package jss;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * Lets through only the requests that carry the context's UI secret in the
 * {@value #HEADER} header: every other request to the Spark UI (a direct
 * {@code curl 127.0.0.1:4040}, another user's jupyter-server-proxy, the REST API under
 * {@code /api/v1/}) gets 403 with an empty body.
 *
 * <p>Installed with {@code spark.ui.filters=jss.UiSecretFilter} and
 * {@code spark.jss.UiSecretFilter.param.secret=<random>} on contexts this project starts
 * (jupyter_spark_sessions/backends/context_start.py): Spark adds the filter to every
 * handler of the UI, the REST API's and those attached later included. The secret is
 * known to the kernel and, through a 0600 file, to its Jupyter server, whose route
 * {@code {base_url}spark-sessions/ui/<port>/} adds it (server/spark_ui_route.py). Spark
 * redacts the setting's value in the Environment tab ({@code spark.redaction.regex}).
 * Without a secret parameter every request is refused.
 */
public final class UiSecretFilter implements Filter {
    /** The request header that carries the secret. */
    public static final String HEADER = "X-Jss-Ui-Secret";

    private byte[] secret = new byte[0];

    @Override
    public void init(FilterConfig config) {
        String value = config.getInitParameter("secret");
        secret = value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        if (request instanceof HttpServletRequest http && allowed(http.getHeader(HEADER))) {
            chain.doFilter(request, response);
            return;
        }
        HttpServletResponse refused = (HttpServletResponse) response;
        refused.setStatus(HttpServletResponse.SC_FORBIDDEN);
        refused.setContentLength(0);
    }

    private boolean allowed(String given) {
        if (secret.length == 0 || given == null) {
            return false;
        }
        // Constant-time: the time taken tells nothing of how much of the secret matched.
        return MessageDigest.isEqual(secret, given.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void destroy() {
        secret = new byte[0];
    }
}
