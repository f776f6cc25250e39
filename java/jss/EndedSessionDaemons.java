package jss;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Stops the Python worker daemon of each Spark Connect session that has ended, on a
 * Connect server this project starts ({@code spark.extraListeners}).
 *
 * <p>Spark keys a Python worker daemon by the environment of the session that ran
 * Python ({@code SPARK_JOB_ARTIFACT_UUID}: the session's own files), so each Connect
 * session that ran a UDF gets a {@code pyspark.daemon} process and four JVM threads of
 * its own, and Spark stops none of them when the session ends: a server that notebooks
 * use all day kept one per session they ever made (129 after the soak's hour). Every
 * {@code spark.jss.endedSessionSweepSeconds} (30) this looks at the daemons of this JVM
 * (the driver; a local master's tasks run here too) and stops those whose session the
 * Connect server no longer has, on two looks in a row: the session's operations were
 * interrupted when it closed, and a look later its tasks are gone. Stopped as Spark
 * stops them itself ({@code PythonWorkerFactory.stop}), taken out of Spark's map first
 * so a later session could never be handed a stopped one; the factory's idle-worker
 * monitor, a thread that never ends by itself, is interrupted.
 *
 * <p>A cluster's executors keep theirs (this listener runs on the driver only).
 * Spark's members (private[spark]) are found by reflection when this is made: on a
 * Spark release without one, this logs why once and does nothing (the server runs on),
 * and tests/test_private_apis.py fails on that release.
 */
public final class EndedSessionDaemons extends SparkListener {
    static final String PERIOD_CONF = "spark.jss.endedSessionSweepSeconds";
    private static final String SESSION_VAR = "SPARK_JOB_ARTIFACT_UUID";
    /** What jobs outside any session's files carry (a classic context's own). */
    private static final String NO_SESSION = "default";
    private static final Logger LOG = LoggerFactory.getLogger(EndedSessionDaemons.class);

    private final Thread sweeper;
    private Sweep sweep;

    /** Made by Spark for {@code spark.extraListeners}, on the driver only. */
    public EndedSessionDaemons(SparkConf conf) {
        long periodMs = (long) (conf.getDouble(PERIOD_CONF, 30.0) * 1000);
        sweeper = new Thread(() -> run(periodMs), "jss-ended-session-daemons");
        sweeper.setDaemon(true);
        sweeper.start();
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd end) {
        sweeper.interrupt();
    }

    private void run(long periodMs) {
        while (true) {
            try {
                Thread.sleep(periodMs);
            } catch (InterruptedException e) {
                return;
            }
            try {
                if (sweep == null) {
                    sweep = new Sweep(SparkEnv.class.getClassLoader());
                }
                sweep.once();
            } catch (ReflectiveOperationException | RuntimeException e) {
                LOG.warn("Ended sessions' Python daemons will not be stopped: {}", e.toString());
                return;
            }
        }
    }

    /** One look at a time; public for tests/test_private_apis.py. */
    public static final class Sweep {
        private final Object sessionManager;
        private final Method listActiveSessions;
        private final Method infoKey;
        private final Method holderIfPresent;
        private final Method holderSession;
        private final Method sessionUuid;
        private final Field pythonWorkers;
        private final Method keyEnvVars;
        private final Method factoryStop;
        private final Class<?> monitorClass;
        private final Field monitorFactory;
        /** Sessions whose daemons were seen without a session at the last look. */
        private Set<String> endedAtLastLook = new HashSet<>();

        public Sweep(ClassLoader spark) throws ReflectiveOperationException {
            String connect = "org.apache.spark.sql.connect.service.";
            Class<?> service = Class.forName(connect + "SparkConnectService$", true, spark);
            Object module = service.getField("MODULE$").get(null);
            sessionManager = service.getMethod("sessionManager").invoke(module);
            Class<?> manager = sessionManager.getClass();
            listActiveSessions = manager.getMethod("listActiveSessions");
            Class<?> info = Class.forName(connect + "SessionHolderInfo", false, spark);
            infoKey = info.getMethod("key");
            Class<?> sessionKey = Class.forName(connect + "SessionKey", false, spark);
            holderIfPresent = manager.getMethod("getIsolatedSessionIfPresent", sessionKey);
            Class<?> holder = Class.forName(connect + "SessionHolder", false, spark);
            holderSession = holder.getMethod("session");
            Class<?> session = Class.forName("org.apache.spark.sql.classic.SparkSession", false, spark);
            sessionUuid = session.getMethod("sessionUUID");
            pythonWorkers = SparkEnv.class.getDeclaredField("pythonWorkers");
            pythonWorkers.setAccessible(true);
            keyEnvVars = Class.forName("org.apache.spark.SparkEnv$PythonWorkersKey", false, spark)
                    .getMethod("envVars");
            String python = "org.apache.spark.api.python.";
            factoryStop = Class.forName(python + "PythonWorkerFactory", false, spark).getMethod("stop");
            monitorClass = Class.forName(python + "PythonWorkerFactory$MonitorThread", false, spark);
            monitorFactory = monitorClass.getField("$outer");
        }

        /** The sessions the Connect server has (their artifact UUIDs). */
        public Set<String> liveSessions() throws ReflectiveOperationException {
            Set<String> live = new HashSet<>();
            Object infos = listActiveSessions.invoke(sessionManager);
            for (Object one : CollectionConverters.asJava((scala.collection.Iterable<?>) infos)) {
                Object found = holderIfPresent.invoke(sessionManager, infoKey.invoke(one));
                scala.Option<?> holder = (scala.Option<?>) found;
                if (holder.isDefined()) {
                    live.add((String) sessionUuid.invoke(holderSession.invoke(holder.get())));
                }
            }
            return live;
        }

        /** The artifact UUID of each daemon of this JVM ("default": of no session). */
        public Set<String> daemonSessions() throws ReflectiveOperationException {
            Set<String> sessions = new HashSet<>();
            SparkEnv env = SparkEnv.get();
            if (env == null) {
                return sessions;
            }
            synchronized (env) {
                for (Object key : workersMap(env).keySet()) {
                    String session = sessionOf(key);
                    if (session != null) {
                        sessions.add(session);
                    }
                }
            }
            return sessions;
        }

        /** Stops the daemons of sessions ended at this look and the last; returns how many. */
        public int once() throws ReflectiveOperationException {
            SparkEnv env = SparkEnv.get();
            if (env == null) {
                return 0;
            }
            Set<String> live = liveSessions();
            Set<String> ended = new HashSet<>();
            List<Object> toStop = new ArrayList<>();
            synchronized (env) { // Spark's own lock for this map (SparkEnv's synchronized methods)
                Map<Object, Object> workers = workersMap(env);
                for (Object key : new ArrayList<>(workers.keySet())) {
                    String session = sessionOf(key);
                    if (session == null || NO_SESSION.equals(session) || live.contains(session)) {
                        continue;
                    }
                    ended.add(session);
                    if (endedAtLastLook.contains(session)) {
                        toStop.add(workers.remove(key));
                    }
                }
            }
            endedAtLastLook = ended;
            for (Object factory : toStop) {
                factoryStop.invoke(factory);
                endMonitor(factory);
            }
            if (!toStop.isEmpty()) {
                LOG.info("Stopped the Python daemons of {} ended session(s).", toStop.size());
            }
            return toStop.size();
        }

        @SuppressWarnings("unchecked")
        private Map<Object, Object> workersMap(SparkEnv env) throws IllegalAccessException {
            Object map = pythonWorkers.get(env);
            return CollectionConverters.asJava((scala.collection.mutable.Map<Object, Object>) map);
        }

        @SuppressWarnings("unchecked")
        private String sessionOf(Object key) throws ReflectiveOperationException {
            Object vars = keyEnvVars.invoke(key);
            scala.Option<?> session = ((scala.collection.Map<Object, ?>) vars).get(SESSION_VAR);
            return session.isDefined() ? (String) session.get() : null;
        }

        /** Interrupts the factory's idle-worker monitor (it sleeps in a loop for good),
         *  silently: its sleep's InterruptedException is how it ends. */
        private void endMonitor(Object factory) throws IllegalAccessException {
            for (Thread thread : Thread.getAllStackTraces().keySet()) {
                if (monitorClass.isInstance(thread) && monitorFactory.get(thread) == factory) {
                    thread.setUncaughtExceptionHandler((t, e) -> { });
                    thread.interrupt();
                }
            }
        }
    }
}
