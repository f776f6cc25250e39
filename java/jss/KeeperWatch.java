package jss;

import java.io.File;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends the shared Spark Connect server when no keeper has looked after it for a while
 * ({@code spark.extraListeners}, set by shared_driver/keeper.py).
 *
 * <p>The server outlives its keeper on purpose: a keeper killed outright must not take
 * every notebook's sessions with it, and the next kernel that finds the keeper gone
 * starts one that takes the server over. When none does (the kernels went with the
 * keeper), nothing would stop the server: this watch does. The keeper touches its
 * heartbeat file every second; once the file has not changed for
 * {@code spark.jss.keeperGraceSeconds} (60) of this JVM's monotonic time, the server
 * exits (Spark's shutdown hooks stop the context). Monotonic: a laptop's sleep, which
 * stops the keeper's clock too, does not count.
 *
 * <p>A listener, not a Spark plugin: Spark makes listeners on the driver only, where a
 * plugin's class is loaded by every executor too, whose class path (a cluster's) does
 * not have this jar.
 */
public final class KeeperWatch extends SparkListener {
    static final String HEARTBEAT_CONF = "spark.jss.keeperHeartbeat";
    static final String GRACE_CONF = "spark.jss.keeperGraceSeconds";
    private static final Logger LOG = LoggerFactory.getLogger(KeeperWatch.class);

    private final Thread watch;

    /** Made by Spark for {@code spark.extraListeners}, on the driver only. */
    public KeeperWatch(SparkConf conf) {
        String path = conf.get(HEARTBEAT_CONF, "");
        if (path.isEmpty()) {
            watch = null;
            return;
        }
        long grace = (long) (conf.getDouble(GRACE_CONF, 60.0) * 1000);
        watch = new Thread(() -> watch(new File(path), grace), "jss-keeper-watch");
        watch.setDaemon(true);
        watch.start();
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd end) {
        if (watch != null) {
            watch.interrupt();
        }
    }

    private static void watch(File heartbeat, long graceMs) {
        long seen = heartbeat.lastModified();
        long seenAt = System.nanoTime();
        while (true) {
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                return;
            }
            long now = heartbeat.lastModified();
            if (now != seen && now != 0) {
                seen = now;
                seenAt = System.nanoTime();
            } else if (TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - seenAt) > graceMs) {
                LOG.error("No keeper for {} s ({} unchanged): the shared server stops.",
                        graceMs / 1000, heartbeat);
                System.exit(0);
            }
        }
    }
}
